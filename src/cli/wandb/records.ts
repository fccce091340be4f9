import protobuf from 'protobufjs';

/**
 * The part of W&B's `wandb_internal.proto` (package wandb_internal) a run's transaction log needs, with the same
 * field numbers: a `Record` holds one of history, summary, config, files, run, exit, final or header.
 */
const PROTO = `
syntax = "proto3";
package wandb_internal;
message Timestamp { int64 seconds = 1; int32 nanos = 2; }
message Record {
  int64 num = 1;
  oneof record_type {
    HistoryRecord history = 2;
    SummaryRecord summary = 3;
    ConfigRecord config = 5;
    FilesRecord files = 6;
    RunRecord run = 17;
    RunExitRecord exit = 18;
    FinalRecord final = 20;
    HeaderRecord header = 21;
  }
  string uuid = 19;
}
message HeaderRecord {}
message FinalRecord {}
message RunRecord {
  string run_id = 1;
  string entity = 2;
  string project = 3;
  ConfigRecord config = 4;
  string run_group = 6;
  string job_type = 7;
  string display_name = 8;
  repeated string tags = 10;
  Timestamp start_time = 17;
}
message RunExitRecord { int32 exit_code = 1; int32 runtime = 2; }
message HistoryStep { int64 num = 1; }
message HistoryItem { string key = 1; repeated string nested_key = 2; string value_json = 16; }
message HistoryRecord { repeated HistoryItem item = 1; HistoryStep step = 2; }
message ConfigItem { string key = 1; repeated string nested_key = 2; string value_json = 16; }
message ConfigRecord { repeated ConfigItem update = 1; repeated ConfigItem remove = 2; }
message SummaryItem { string key = 1; repeated string nested_key = 2; string value_json = 16; }
message SummaryRecord { repeated SummaryItem update = 1; repeated SummaryItem remove = 2; }
message FilesItem { string path = 1; int32 policy = 2; string external_path = 16; }
message FilesRecord { repeated FilesItem files = 1; }
`;

const RecordType = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('wandb_internal.Record');

/** A key and its value as JSON text (how W&B's records carry values). */
export interface JsonItem {
  key: string;
  value_json: string;
}

/** One record of the log, in the proto's own field names; exactly one of the optional parts is set. */
export interface WandbRecord {
  num?: number;
  history?: { item: JsonItem[]; step: { num: number } };
  summary?: { update: JsonItem[] };
  config?: { update: JsonItem[] };
  files?: { files: { path: string; policy: number }[] };
  run?: {
    run_id: string;
    entity?: string;
    project?: string;
    config?: { update: JsonItem[] };
    run_group?: string;
    job_type?: string;
    display_name?: string;
    tags?: string[];
    start_time?: { seconds: number; nanos: number };
  };
  exit?: { exit_code: number; runtime: number };
  final?: Record<string, never>;
  header?: Record<string, never>;
}

/** FilesItem policies: upload now, at the end, or as the file changes. */
export const FILE_POLICY = { now: 0, end: 1, live: 2 } as const;

export function encodeRecord(record: WandbRecord): Uint8Array {
  return RecordType.encode(RecordType.fromObject(record)).finish();
}

export function decodeRecord(bytes: Uint8Array): WandbRecord {
  return RecordType.toObject(RecordType.decode(bytes), { longs: Number, defaults: true }) as WandbRecord;
}

/** Items of a flat object, each value as JSON text. */
export function jsonItems(values: Record<string, unknown>): JsonItem[] {
  return Object.entries(values).map(([key, value]) => ({ key, value_json: JSON.stringify(value) }));
}
