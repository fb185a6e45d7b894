import { closeSync, readdirSync, readFileSync } from 'node:fs';

/** O_CLOEXEC as /proc/<pid>/fdinfo prints a descriptor's flags (octal). */
const O_CLOEXEC = 0o2000000;

/**
 * Closes the file descriptors this process inherited beyond stdin, stdout and stderr
 * (docs/security.md#sandbox). Node and libuv open every descriptor of their own close-on-exec,
 * so one without that flag was handed down by whatever started the runtime (a shell's
 * `exec 9<secret`, a supervisor's pipe); left open, it would pass on through bubblewrap to every
 * command of every run. Called once by the commands that execute runs (`serve`, `dev`, `worker`),
 * before anything else opens a file. Linux only (reads /proc); elsewhere it closes nothing.
 * Returns the descriptors closed.
 */
export function closeInheritedDescriptors(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const closed: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd <= 2) continue;
    let info: string;
    try {
      info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // the directory listing's own descriptor, closed by now
    }
    const flags = /^flags:\s+([0-7]+)$/m.exec(info);
    if (!flags || (parseInt(flags[1], 8) & O_CLOEXEC) !== 0) continue;
    try {
      closeSync(fd);
      closed.push(fd);
    } catch {
      // Already closed.
    }
  }
  return closed;
}
