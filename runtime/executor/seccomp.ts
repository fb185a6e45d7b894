/**
 * The system-call filter of a sandboxed command (docs/security.md#system-calls): a classic BPF
 * program that bubblewrap installs (`--seccomp FD`) just before it starts the command, so it holds
 * for the command and everything it starts, whatever user it runs as.
 *
 * It refuses what an unprivileged process could otherwise reach of the kernel beyond its sandbox:
 * - a new user namespace (`unshare` or `clone` with CLONE_NEWUSER): inside one a process holds every
 *   capability over its own namespaces, which opens mounts, network configuration and much more
 *   of the kernel to it. As another user bubblewrap's own `--disable-userns` also stops it; as root
 *   (commands run as `--run-uid` with setpriv, without a user namespace of their own) this filter
 *   is what does;
 * - `clone3`, whose flags live in memory a filter cannot read: it fails with ENOSYS, on which the C
 *   library and Rust's standard library fall back to `clone`, whose flags it can (Go uses `clone`);
 * - the kernel's key rings (not namespaced), `bpf`, `perf_event_open`, `userfaultfd` and io_uring:
 *   the calls container runtimes' default profiles refuse to unprivileged code, each a recurrent
 *   source of kernel exploits, none needed to build or test software.
 * Everything else is allowed. A call through an ABI the program has no table for cannot go around
 * the numbers: x32's (on x86_64) fail with ENOSYS, and one of an unknown architecture ends the process.
 *
 * Pure: the program is built from tables, and test/runtime/executor/seccomp.test.ts runs it in a
 * BPF interpreter as well as in the kernel.
 */

/** `struct seccomp_data` offsets (linux/seccomp.h): nr, arch, then the six 64-bit arguments. */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
/** The low 32 bits of the first argument (little-endian, as every ABI below is). */
const ARG0_LOW_OFFSET = 16;

const CLONE_NEWUSER = 0x1000_0000;
const EPERM = 1;
const ENOSYS = 38;

/** Filter verdicts (linux/seccomp.h). */
export const RET = {
  ALLOW: 0x7fff_0000,
  ERRNO: 0x0005_0000,
  KILL_PROCESS: 0x8000_0000,
} as const;

/** Classic BPF opcodes used here (linux/filter.h). */
export const OP = {
  LD_W_ABS: 0x20,
  JEQ_K: 0x15,
  JGE_K: 0x35,
  JSET_K: 0x45,
  RET_K: 0x06,
} as const;

/** The calls this filter refuses, by ABI: their numbers in that ABI's table. */
interface Abi {
  name: string;
  /** AUDIT_ARCH_* (linux/audit.h). */
  arch: number;
  /** Numbers at or above this belong to another ABI sharing the arch value (x32 on x86_64). */
  foreignFrom?: number;
  /** Refused when their first argument (the flags) asks for a new user namespace. */
  newUserNs: { unshare: number; clone: number };
  /** Fails with ENOSYS, so callers fall back to `clone`. */
  clone3: number;
  /** Fails with EPERM. */
  refused: Record<string, number>;
}

/**
 * An ABI's table. clone3 and io_uring have the same numbers in all four; the others, in the order
 * unshare, clone, add_key, request_key, keyctl, perf_event_open, bpf, userfaultfd.
 */
function abi(name: string, arch: number, numbers: readonly number[], foreignFrom?: number): Abi {
  const [unshare, clone, add_key, request_key, keyctl, perf_event_open, bpf, userfaultfd] = numbers;
  return {
    name,
    arch,
    ...(foreignFrom === undefined ? {} : { foreignFrom }),
    newUserNs: { unshare, clone },
    clone3: 435,
    refused: { add_key, request_key, keyctl, perf_event_open, bpf, userfaultfd, io_uring_setup: 425, io_uring_enter: 426, io_uring_register: 427 },
  };
}

const X86_64 = abi('x86_64', 0xc000_003e, [272, 56, 248, 249, 250, 298, 321, 323], 0x4000_0000);
const I386 = abi('i386', 0x4000_0003, [310, 120, 286, 287, 288, 336, 357, 374]);
const AARCH64 = abi('aarch64', 0xc000_00b7, [97, 220, 217, 218, 219, 241, 280, 282]);
const ARM = abi('arm', 0x4000_0028, [337, 120, 309, 310, 311, 364, 386, 388]);

/** The ABIs a process of each Node architecture can call the kernel with: its own, and the 32-bit one. */
const ABIS_BY_PLATFORM: Record<string, Abi[]> = { x64: [X86_64, I386], arm64: [AARCH64, ARM] };

/** The ABIs of `platformArch` (Node's `process.arch`), or undefined when this filter has no table for it. */
export function seccompAbis(platformArch: string): readonly Abi[] | undefined {
  return ABIS_BY_PLATFORM[platformArch];
}

/** The names of the calls refused with EPERM on every ABI (for docs and tests). */
export const REFUSED_CALLS = Object.keys(X86_64.refused);

/** One instruction before its jump is resolved: `jt` names a label; otherwise (and when false) the next instruction. */
interface Insn {
  code: number;
  k: number;
  jt?: string;
}

/**
 * The filter as bubblewrap reads it: `struct sock_filter` records (u16 code, u8 jt, u8 jf, u32 k),
 * in the machine's byte order, little-endian on every architecture above. Undefined for an
 * architecture without a table (the sandbox then refuses to start, docs/security.md#system-calls).
 */
export function seccompProgram(platformArch: string = process.arch): Buffer | undefined {
  const abis = seccompAbis(platformArch);
  if (!abis) return undefined;
  const code: (Insn | { label: string })[] = [];
  const ld = (offset: number): Insn => ({ code: OP.LD_W_ABS, k: offset });
  const ret = (k: number): Insn => ({ code: OP.RET_K, k });

  code.push(ld(ARCH_OFFSET));
  for (const abi of abis) code.push({ code: OP.JEQ_K, k: abi.arch, jt: abi.name });
  code.push(ret(RET.KILL_PROCESS));
  for (const abi of abis) {
    code.push({ label: abi.name }, ld(NR_OFFSET));
    if (abi.foreignFrom !== undefined) code.push({ code: OP.JGE_K, k: abi.foreignFrom, jt: 'enosys' });
    code.push({ code: OP.JEQ_K, k: abi.newUserNs.unshare, jt: 'flags' }, { code: OP.JEQ_K, k: abi.newUserNs.clone, jt: 'flags' });
    code.push({ code: OP.JEQ_K, k: abi.clone3, jt: 'enosys' });
    for (const nr of Object.values(abi.refused)) code.push({ code: OP.JEQ_K, k: nr, jt: 'eperm' });
    code.push(ret(RET.ALLOW));
  }
  code.push({ label: 'flags' }, ld(ARG0_LOW_OFFSET), { code: OP.JSET_K, k: CLONE_NEWUSER, jt: 'eperm' }, ret(RET.ALLOW));
  code.push({ label: 'eperm' }, ret(RET.ERRNO | EPERM));
  code.push({ label: 'enosys' }, ret(RET.ERRNO | ENOSYS));
  return assemble(code);
}

/** Resolves labels into the relative jumps of classic BPF (forward only, at most 255 instructions away). */
function assemble(code: (Insn | { label: string })[]): Buffer {
  const at = new Map<string, number>();
  const insns: Insn[] = [];
  for (const item of code) {
    if ('label' in item) at.set(item.label, insns.length);
    else insns.push(item);
  }
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    const jump = (label: string | undefined): number => {
      if (label === undefined) return 0;
      const offset = at.get(label)! - (i + 1);
      if (!(offset >= 0 && offset <= 255)) throw new Error(`seccomp: jump to ${label} out of range`);
      return offset;
    };
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(jump(insn.jt), i * 8 + 2);
    out.writeUInt8(0, i * 8 + 3); // jf: every test falls through when false
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}
