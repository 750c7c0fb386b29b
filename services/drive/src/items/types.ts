/** The shapes the drive's operations take and give. */
import type { ItemRow, LockRow, PropRow } from './store.js';

export interface DriveSettings {
  /** Largest file accepted, in bytes (413 above). */
  maxFileBytes: number;
  /** How long an unreferenced blob is kept before it is collected (readers may still stream it). */
  graceSeconds: number;
  /** Longest item lock; a lock asked for longer (or forever) gets this. */
  maxLockSeconds: number;
  /** How often the collector runs. */
  collectEveryMs: number;
  /** The most files one site deployment holds (413 above). */
  siteMaxFiles: number;
  /** The most bytes one site deployment holds, all files together (413 above). */
  siteMaxBytes: number;
  /** Deployments a site keeps: a deploy removes the oldest beyond this many (never the one served). */
  siteKeepDeployments: number;
  /** Whole-drive scans (grep, find, duplicates, folder size, zip, extract) one account may run at once here. */
  scansPerAccount: number;
  /** How long one grep may search before its worker is terminated (422 grep_timeout). */
  grepTimeoutMs: number;
  /** How much nicer than the service grep's worker threads run (SVC_HEAVY_WORK_NICE; docs/reliability.md, "CPU priority"). */
  grepNice: number;
  /** Per-account storage quotas (docs/drive.md, "Quotas"). */
  quotas: QuotaLimits;
}

/** What one account may hold and write. */
export interface QuotaLimits {
  /** Bytes of files (every drive of the account together). */
  bytesLive: number;
  /** Bytes of replaced content kept (versions, and content awaiting collection). */
  bytesVersions: number;
  /** Content writes in one minute (a fixed window starting on the minute). */
  writesPerMinute: number;
}

/** An item, with its locks, custom properties and path when a full view was asked. */
export interface ItemView {
  row: ItemRow;
  locks?: Array<LockRow & { rootPath: string }>;
  props?: PropRow[];
  path?: string;
}

export interface UploadHeader {
  itemId?: string;
  parentId?: string;
  name?: string;
  projectId?: string;
  contentType?: string;
  declaredSize?: number;
  ifMatch?: string;
  ifNoneMatch?: string;
  requirePrecondition: boolean;
  overwrite: boolean;
  lockTokens: string[];
  /** Not counted against the writes a minute (the entries of an extract, counted once as a whole). */
  uncounted?: boolean;
}

export interface DownloadRequest {
  id: string;
  /** The client's Range header value. */
  range?: string;
  /** Deprecated parts of a range (older gateways), used when `range` is absent. */
  rangeStart?: number;
  rangeEnd?: number;
  suffixLength?: number;
  ifNoneMatch?: string;
  ifRange?: string;
  headOnly: boolean;
}

export interface DownloadResult {
  item: ItemRow;
  notModified: boolean;
  partial: boolean;
  rangeNotSatisfiable: boolean;
  start: number;
  end: number;
  /** The blob to read the bytes from, when there are bytes to send. */
  blobKey?: string;
  /** The content's CRC-32, when it has one and the whole file is served (the reader checks against it). */
  crc32?: number;
}

export interface UploadCommit {
  uploadId: string;
  sha256: string;
  size: number;
  /** CRC-32 of the same bytes (zlib's), when the writer computed it (older gateways do not). */
  crc32?: number;
}
