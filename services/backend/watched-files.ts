// The watched files have one owner for both services: services/shared/watched-files.ts.
export { WATCH_POLL_MS, WatchedFiles, type ReloadReason, type WatchedFilesOptions } from '../shared/watched-files.ts';
