/**
 * The sandbox's system-call filter (docs/security.md#system-calls), run here by a classic BPF
 * interpreter over `struct seccomp_data` records; sandbox.test.ts runs it in the kernel.
 */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { OP, REFUSED_CALLS, RET, seccompAbis, seccompProgram } from '../../../runtime/executor/seccomp.ts';

const ARCH = { x86_64: 0xc000003e, i386: 0x40000003, aarch64: 0xc00000b7, arm: 0x40000028 };
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWNS = 0x00020000;
const EPERM = RET.ERRNO | 1;
const ENOSYS = RET.ERRNO | 38;

/** Runs a filter as the kernel would over one call: `nr`, the ABI's `arch`, the first argument. */
function verdict(program: Buffer, arch: number, nr: number, arg0 = 0n): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr, 0);
  data.writeUInt32LE(arch, 4);
  data.writeBigUInt64LE(arg0, 16);
  let a = 0;
  for (let pc = 0; pc < program.length / 8; ) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    pc++;
    switch (code) {
      case OP.LD_W_ABS:
        a = data.readUInt32LE(k);
        break;
      case OP.JEQ_K:
        pc += a === k ? jt : jf;
        break;
      case OP.JGE_K:
        pc += a >= k ? jt : jf;
        break;
      case OP.JSET_K:
        pc += (a & k) !== 0 ? jt : jf;
        break;
      case OP.RET_K:
        return k;
      default:
        throw new Error(`unknown opcode ${code}`);
    }
  }
  throw new Error('the program ran off its end');
}

test('seccomp: on x86_64, a new user namespace is refused by unshare and clone, other namespaces and plain clones are left to the kernel', () => {
  const p = seccompProgram('x64')!;
  for (const [name, nr] of [['unshare', 272], ['clone', 56]] as const) {
    assert.equal(verdict(p, ARCH.x86_64, nr, BigInt(CLONE_NEWUSER)), EPERM, `${name}(CLONE_NEWUSER)`);
    assert.equal(verdict(p, ARCH.x86_64, nr, BigInt(CLONE_NEWUSER | CLONE_NEWNS)), EPERM, `${name}(CLONE_NEWUSER|CLONE_NEWNS)`);
    assert.equal(verdict(p, ARCH.x86_64, nr, BigInt(CLONE_NEWNS)), RET.ALLOW, `${name}(CLONE_NEWNS) is the kernel's to refuse (no capability)`);
  }
  // fork's flags, as glibc passes them (SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID), and a thread's.
  assert.equal(verdict(p, ARCH.x86_64, 56, 0x01200011n), RET.ALLOW);
  assert.equal(verdict(p, ARCH.x86_64, 56, 0x003d0f00n), RET.ALLOW);
  // The flag in the high half of the 64-bit argument means nothing to the kernel (flags are an int).
  assert.equal(verdict(p, ARCH.x86_64, 272, BigInt(CLONE_NEWUSER) << 32n), RET.ALLOW);
  assert.equal(verdict(p, ARCH.x86_64, 435), ENOSYS, 'clone3 falls back to clone');
  for (const nr of [0, 1, 2, 57, 59, 231, 302, 334, 436]) assert.equal(verdict(p, ARCH.x86_64, nr), RET.ALLOW, `call ${nr}`);
});

test('seccomp: the refused calls get EPERM on every ABI of both architectures; x32 and unknown architectures cannot go around them', () => {
  const x64 = seccompProgram('x64')!;
  const arm64 = seccompProgram('arm64')!;
  for (const [program, platform] of [[x64, 'x64'], [arm64, 'arm64']] as const) {
    for (const abi of seccompAbis(platform)!) {
      assert.deepEqual(Object.keys(abi.refused).sort(), [...REFUSED_CALLS].sort(), abi.name);
      for (const [name, nr] of Object.entries(abi.refused)) assert.equal(verdict(program, abi.arch, nr), EPERM, `${abi.name} ${name}`);
      assert.equal(verdict(program, abi.arch, abi.newUserNs.unshare, BigInt(CLONE_NEWUSER)), EPERM, `${abi.name} unshare`);
      assert.equal(verdict(program, abi.arch, abi.newUserNs.clone, BigInt(CLONE_NEWUSER)), EPERM, `${abi.name} clone`);
      assert.equal(verdict(program, abi.arch, abi.clone3), ENOSYS, `${abi.name} clone3`);
    }
  }
  // x32 shares x86_64's arch value, with bit 30 set in the number: its unshare is 0x40000000 + 272.
  assert.equal(verdict(x64, ARCH.x86_64, 0x40000000 + 272, BigInt(CLONE_NEWUSER)), ENOSYS);
  assert.equal(verdict(x64, ARCH.aarch64, 97, BigInt(CLONE_NEWUSER)), RET.KILL_PROCESS, 'an ABI this machine does not have');
  assert.equal(verdict(arm64, ARCH.x86_64, 0), RET.KILL_PROCESS);
  assert.equal(verdict(arm64, ARCH.arm, 3), RET.ALLOW, "arm's read");
  assert.equal(seccompProgram('riscv64'), undefined, 'no table: the sandbox refuses to start');
});

test("seccomp: the tables' numbers are this machine's kernel headers' (where installed)", { skip: existsSync('/usr/include/asm-generic/unistd.h') ? false : 'no kernel headers here (apt-get install linux-libc-dev)' }, () => {
  const numbers = (file: string) => {
    const out = new Map<string, number>();
    for (const m of readFileSync(file, 'utf8').matchAll(/^#define __NR(?:3264)?_(\w+)\s+(\d+)/gm)) out.set(m[1], Number(m[2]));
    return out;
  };
  const headers: [string, string][] = [
    ['x86_64', '/usr/include/x86_64-linux-gnu/asm/unistd_64.h'],
    ['i386', '/usr/include/x86_64-linux-gnu/asm/unistd_32.h'],
    ['aarch64', '/usr/include/asm-generic/unistd.h'],
  ];
  let checked = 0;
  for (const [name, file] of headers) {
    if (!existsSync(file)) continue;
    const table = numbers(file);
    const abi = [...seccompAbis('x64')!, ...seccompAbis('arm64')!].find((a) => a.name === name)!;
    const ours = { ...abi.refused, unshare: abi.newUserNs.unshare, clone: abi.newUserNs.clone, clone3: abi.clone3 };
    for (const [call, nr] of Object.entries(ours)) assert.equal(nr, table.get(call), `${name} ${call}`);
    checked++;
  }
  assert.ok(checked >= 1);
});
