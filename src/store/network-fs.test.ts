import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { networkFileSystemOf, warnIfNetworkFileSystem, type StatFs } from './network-fs.js';

/** A statfs that answers `type` for paths at or under `mount` and ENOENT for paths under `missing`. */
function fakeStatfs(mount: string, type: number, missing = `${mount}/not-yet`): StatFs {
  return (path) => {
    if (path.startsWith(missing)) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    return { type: path.startsWith(mount) ? type : 0xef53 };
  };
}

describe('a directory store on a network file system', () => {
  it('is told apart from a local one by its file system, found from the nearest folder that exists', () => {
    expect(networkFileSystemOf('/mnt/shared/not-yet/store', fakeStatfs('/mnt/shared', 0x6969), 'linux')).toBe('NFS');
    expect(networkFileSystemOf('/mnt/shared/store', fakeStatfs('/mnt/shared', 0xff534d42), 'linux')).toBe('CIFS');
    expect(networkFileSystemOf('/home/me/store', fakeStatfs('/mnt/shared', 0x6969), 'linux')).toBeUndefined();
    expect(networkFileSystemOf('/mnt/shared/store', fakeStatfs('/mnt/shared', 0x6969), 'darwin')).toBeUndefined();
    // This machine's temporary folder, read for real.
    expect(networkFileSystemOf(join(tmpdir(), 'no-such-store'))).toBeUndefined();
  });

  it('is warned about once per store, with what to use across hosts', () => {
    const lines: string[] = [];
    const statfs = fakeStatfs('/mnt/nfs-test', 0x6969);
    warnIfNetworkFileSystem('/mnt/nfs-test/store', (line) => lines.push(line), statfs);
    warnIfNetworkFileSystem('/mnt/nfs-test/store', (line) => lines.push(line), statfs);
    warnIfNetworkFileSystem('/home/me/store', (line) => lines.push(line), statfs);
    expect(lines).toEqual([expect.stringContaining('/mnt/nfs-test/store is on NFS, a network file system')]);
    expect(lines[0]).toContain('A directory store is for local disk only; s3:// across hosts');
  });
});
