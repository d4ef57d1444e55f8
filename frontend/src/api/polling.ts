// Reads of something still moving poll every POLL_MS; a job moves while it is queued or running.
import type { Job } from "./types";

export const POLL_MS = 2000;
const ACTIVE = new Set(["queued", "running"]);

export const isActive = (job: Job): boolean => ACTIVE.has(job.status);
