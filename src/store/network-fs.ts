import { statfsSync, type StatsFs } from 'node:fs';
import { dirname } from 'node:path';

/**
 * File systems shared between hosts, by the magic number Linux's statfs reports for them (`linux/magic.h` and the file
 * systems' own headers). Appends from several hosts there are not atomic, so the frames of a group's journal can tear.
 */
const NETWORK_FILE_SYSTEMS = new Map<number, string>([
  [0x6969, 'NFS'],
  [0x517b, 'SMB'],
  [0xff534d42, 'CIFS'],
  [0xfe534d42, 'SMB2'],
  [0x00c36400, 'Ceph'],
  [0x0bd00bd0, 'Lustre'],
  [0x47504653, 'GPFS'],
  [0x19830326, 'BeeGFS'],
  [0x5346414f, 'AFS'],
  [0x6b414653, 'kAFS'],
  [0x01161970, 'GFS2'],
  [0x7461636f, 'OCFS2'],
]);

/** What `network-fs` reads of a path (tests pass a fake). */
export type StatFs = (path: string) => Pick<StatsFs, 'type'>;

/**
 * The network file system `path` lies on (the nearest existing folder at or above it), by name, or undefined for a
 * local one. Linux only: other systems number their file systems otherwise, and are taken as local.
 */
export function networkFileSystemOf(path: string, statfs: StatFs = statfsSync, platform = process.platform): string | undefined {
  if (platform !== 'linux') return undefined;
  for (let at = path; ; at = dirname(at)) {
    try {
      return NETWORK_FILE_SYSTEMS.get(statfs(at).type >>> 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(at) === at) return undefined;
    }
  }
}

const warned = new Set<string>();

/**
 * Warns, once per process and store, that a directory store lies on a network file system. A warning, not a refusal:
 * one host writing a store on NFS (a cluster's shared home) is safe; several hosts writing it are not, and the damage
 * that does is reported when a journal is read (`JournalDamagedError`).
 */
export function warnIfNetworkFileSystem(root: string, warn: (line: string) => void = console.warn, statfs?: StatFs): void {
  if (warned.has(root)) return;
  const name = networkFileSystemOf(root, statfs);
  if (name === undefined) return;
  warned.add(root);
  warn(
    `clotho: the trajectory store ${root} is on ${name}, a network file system. A directory store is for local disk only; ` +
      's3:// across hosts: appends from several hosts can tear each other’s records (a damaged record is reported, and its group ' +
      'is not read).',
  );
}
