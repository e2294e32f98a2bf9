import { execFile } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Real file systems for storage-fault tests, mounted by the test (needs root, or CAP_SYS_ADMIN):
 * a small tmpfs to fill up, and an ext4 image on a loop device whose file system the kernel
 * turns read-only on an error. `mountRefusal()` says why mounting is not possible here, if it is not.
 */
export interface Mounted {
  dir: string;
  unmount(): Promise<void>;
}

export interface LoopExt4 extends Mounted {
  /** The loop device's name (loop0) as /sys/fs/ext4 lists it. */
  device: string;
  /** Raises an ext4 error (sysfs trigger_fs_error); with errors=remount-ro the kernel makes it read-only. */
  failReadOnly(): void;
  /** Unmounts, repairs (e2fsck -fy, as an operator would after such an error), mounts read-write again. */
  repairAndRemount(): Promise<void>;
}

/** Why this process cannot mount file systems (a message), or undefined when it can. */
export async function mountRefusal(): Promise<string | undefined> {
  let probe: Mounted | undefined;
  try {
    probe = await mountTmpfs(1 << 20);
    return undefined;
  } catch (err) {
    return (err as Error).message.split("\n")[0];
  } finally {
    await probe?.unmount();
  }
}

export async function mountTmpfs(sizeBytes: number): Promise<Mounted> {
  const dir = mkdtempSync(path.join(tmpdir(), "petstore-tmpfs-"));
  try {
    await run("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes},mode=0755`, "tmpfs", dir]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    dir,
    async unmount() {
      await run("umount", [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function mountLoopExt4(sizeMiB: number): Promise<LoopExt4> {
  const home = mkdtempSync(path.join(tmpdir(), "petstore-ext4-"));
  const image = path.join(home, "fs.img");
  const dir = path.join(home, "mnt");
  await run("truncate", ["-s", `${sizeMiB}M`, image]);
  await run("mkfs.ext4", ["-q", "-F", image]);
  await run("mkdir", [dir]);
  const mount = async () => {
    await run("mount", ["-o", "loop,errors=remount-ro", image, dir]);
    const { stdout } = await run("findmnt", ["-no", "SOURCE", dir]);
    return path.basename(stdout.trim());
  };
  const unmount = async () => {
    await run("umount", [dir]); // a loop device set up by mount -o loop is released with it
  };
  const fs: LoopExt4 = {
    dir,
    device: await mount(),
    failReadOnly() {
      writeFileSync(`/sys/fs/ext4/${fs.device}/trigger_fs_error`, "storage-fault test");
    },
    async repairAndRemount() {
      await unmount();
      // Exit 1 means "errors corrected", which is the point.
      await run("e2fsck", ["-fy", image]).catch((err: { code?: number }) => {
        if (err.code !== 1) throw err;
      });
      fs.device = await mount();
    },
    async unmount() {
      await unmount().catch(() => {});
      rmSync(home, { recursive: true, force: true });
    },
  };
  return fs;
}

/** Fills the file system under `dir` to the last byte (a file named "filler"); returns that file's path. */
export function fillUp(dir: string): string {
  const filler = path.join(dir, "filler");
  const fd = openSync(filler, "w");
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk, 0, Math.min(chunk.length, Math.max(4096, Number(statfsSync(dir).bavail) * statfsSync(dir).bsize)));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    closeSync(fd);
  }
  return filler;
}
