import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU time of other processes from /proc/<pid>/stat: utime + stime (fields 14 and 15), in clock
 * ticks of 1/100 s (USER_HZ, 100 on Linux everywhere). With runs of thousands of requests the
 * 10 ms tick is well below a µs per request.
 */
const TICK_US = 10_000;

/** utime + stime of a /proc/…/stat line, in µs. */
function statCpuMicros(stat: string): number {
  // The command name (field 2) is in parentheses and may hold spaces: count from after it.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) * TICK_US;
}

/** utime + stime of `pid`, in µs. */
export function cpuMicros(pid: number): number {
  return statCpuMicros(readFileSync(`/proc/${pid}/stat`, "utf8"));
}

/**
 * CPU of each kind of thread of `pid` so far, in µs: "main" (the event loop), and the others by
 * the name Node gives them with any number dropped (V8Worker: V8's compiler and collector
 * helpers; libuv-worker: the thread pool; WorkerThread: worker_threads). A thread that ended
 * meanwhile no longer counts.
 */
export function threadCpuMicros(pid: number): Map<string, number> {
  const byKind = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    } catch {
      continue; // ended between the listing and the read
    }
    const kind = tid === String(pid) ? "main" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).replace(/[\s_-]*\d+$/, "");
    byKind.set(kind, (byKind.get(kind) ?? 0) + statCpuMicros(stat));
  }
  return byKind;
}

/** cutime + cstime of a /proc/<pid>/stat line: CPU of the children it has waited for, in µs. */
export function childrenCpuMicros(statLine: string): number {
  const f = statLine.slice(statLine.lastIndexOf(")") + 2).split(" ");
  return (Number(f[13]) + Number(f[14])) * TICK_US;
}

/** CPU of `pid` so far, or undefined once it has exited (a database connection closed meanwhile). */
function cpuIfAlive(pid: number): number | undefined {
  try {
    return cpuMicros(pid);
  } catch {
    return undefined;
  }
}

/** Measures the CPU that named processes use between start and stop (one that exits meanwhile counts 0). */
export function cpuMeter(pids: Readonly<Record<string, number>>): { stop(): Record<string, number> } {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuIfAlive(pid)]));
  return {
    stop: () =>
      Object.fromEntries(
        Object.entries(pids).map(([name, pid]) => {
          const start = before[name];
          const end = cpuIfAlive(pid);
          return [name, start === undefined || end === undefined ? 0 : end - start];
        }),
      ),
  };
}
