// Shapes of the JSON answers of the `kairos view` HTTP API (docs/VIEW_API.md).

export interface ThreadInfo { tid: number; pid: number; name: string; process: string; samples: number }

export interface ResultInfo {
  id: number; name: string; path: string; ok: boolean; error: string | null;
  kind?: string; command?: string; samples?: number; start_ns?: number; duration_ns?: number;
  weight_unit?: string; event?: string; threads?: ThreadInfo[]; cpus?: number[];
  has_branches?: boolean; branch_depth?: number | null; methods?: string[];
  has_counters?: boolean; has_memory?: boolean; views?: string[] | null; notes?: string[];
}

export interface ResultsAnswer { results: ResultInfo[] }

export interface TopFunction { func: number; function: string; module: string; self: number; self_share: number; count: number }
export interface SummaryAnswer { facts: [string, string][]; top: TopFunction[]; notes?: string[] }

export interface FunctionTable { id: number[]; name: string[]; module: string[] }
export interface Lane {
  key: string; label: string; tid: number | null; cpu: number | null; samples: number;
  bucket: number[]; count: number[]; weight: number[]; func: number[];
}
export interface TimelineAnswer {
  from: number; to: number; width: number; bucket_ns: number;
  functions: FunctionTable; lanes: Lane[];
}

export interface Frame { function: string; module: string; file: string | null; line: number | null }
export interface BranchRecord {
  order: number; position: number; from_function: string; from_module: string;
  to_function: string; to_module?: string; kind: string; cycles: number | null;
  mispredicted: boolean; is_new: boolean; times: (number | null)[];
}
export interface SampleAnswer {
  index: number; time_ns: number; tid: number; cpu: number | null; weight: number;
  stack: Frame[]; methods: string[]; branches: BranchRecord[]; note: string | null;
}

export interface TreeRows {
  id: number[]; name: string[]; module: string[]; self: number[]; total: number[];
  count: number[]; has_children: boolean[];
}
export interface TreeAnswer { total_weight: number; total_count: number; rows: TreeRows }

export interface Series { name: string; values: (number | null)[] }
export interface Histogram { name: string; edges: number[]; counts: number[] }
export interface CountersAnswer { bucket_ns: number; series: Series[]; histograms: Histogram[] }

export interface CompareRows {
  name: string[]; module: string[]; a: number[]; b: number[];
  a_share: number[]; b_share: number[]; diff: number[]; ratio: (number | null)[];
}
/** `columns` (headings of `facts`, first one for the label) is sent by the server beyond VIEW_API.md. */
export interface CompareAnswer { facts: string[][]; rows: CompareRows; columns?: string[] }

export interface MemoryObject {
  id: number; name: string; kind: string | null; size: number | null; samples: number; share: number;
  weight: number; loads: number; stores: number; threads: number;
}
/** One thread's row of a line's grid: per byte of the line, the loads and stores that touched it. */
export interface GridRow {
  tid: number; loads: number[]; stores: number[]; offsets: [number, number][]; load_count: number; store_count: number;
}
export interface CacheLine {
  addr: string; object: number; object_name: string; object_offset: number; verdict: string;
  samples: number; share: number; weight: number; hitm: number; loads: number; stores: number;
  functions: string[]; fix: string | null; threads_total: number; grid: GridRow[];
}
export interface MemorySeries {
  from: number; to: number; width: number; bucket_ns: number;
  objects: { object: number; name: string; counts: number[] }[];
}
export interface MemoryAnswer {
  source: string; source_name: string; source_reason: string; memory_bound: string | null; weight_unit: string;
  samples: number; watch_hits: number; unresolved: [string, number][]; false_sharing_lines: number; true_sharing_lines: number;
  lines_total: number; shared_lines: number; objects_total: number;
  objects: MemoryObject[]; lines: CacheLine[]; series: MemorySeries;
}

/** Per node id (as a string; "?" for an unknown node): a count. */
export type PerNode = Record<string, number>;
export interface NumaObject {
  id: number; name: string; kind: string | null; size: number | null; label: string | null;
  pages_total: number; pages: PerNode; estimated: number; huge_pages: number; threads: PerNode; samples: number;
  remote: number | null; pmu_remote: number | null; policy: string; touching_threads: number;
  first_touch: { tid: number; node: string; function: string } | null;
}
export interface NumaToucher { object: number; name: string; tid: number; pid: number; cpu: number; node: string; pages: number; function: string; stack: string }
export interface NumaAnswer {
  recorded: boolean; why_not: string | null; nodes: { id: number; cpus: string }[]; nodes_with_cpus: number;
  facts: [string, string][]; notes: string[]; remote_share: number | null; pmu_remote_share: number | null;
  objects_total: number; objects: NumaObject[]; touchers: NumaToucher[];
  problems: { object: number; name: string; kind: string; sentence: string }[];
  /** Objects on one node that sampling saw too little of to judge. */
  unjudged: { object: number; name: string; sentence: string }[];
  timeline: { t: number; nodes: PerNode }[];
}

/** A time range in ns relative to the result's first sample, half-open. */
export interface Range { from: number; to: number }
