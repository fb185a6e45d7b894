/**
 * Where a run's commands execute (docs/security.md#sandbox).
 *
 * `sandbox` (the default on Linux): every command of a run (the repo clone, setup, the agent and
 * the `git status`/`git diff` afterwards) runs under bubblewrap in namespaces of its own, seeing:
 * the system directories read-only (/usr and friends, a list of harmless files of /etc), a fresh
 * /dev, a /proc of its own PID namespace, a private /tmp, the directories the operator names with
 * --sandbox-ro-bind, and the run's workspace, writable, at /workspace. The data dir and the work
 * dir (other runs' workspaces) are covered by an empty tmpfs wherever a visible directory holds
 * them. With `network: none` (the default) the command has only its own loopback. Limits on
 * memory, processes and open files are set with prlimit. When the runtime is root, bubblewrap
 * runs privileged (it needs no user namespace then) and the command is started as an unprivileged
 * user (`runAs`, 65534 by default) with setpriv, so even a root-only file that were visible stays
 * unreadable.
 *
 * `direct`: the command runs on the host with the runtime's view of the machine, as the runtime's
 * user, or as `runAs` when the runtime is root.
 *
 * A wrapped command is started by a small launcher that reports, on fd 3, a program it cannot
 * find or execute, so the transcript says "agent program ... was not found" as it does unwrapped.
 */

import { spawn, spawnSync } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError } from '../../core/errors.ts';
import { isWithin, type Config, type ExecutorKind, type SandboxSettings } from '../config.ts';
import { runInGroup, SECCOMP_FD, type GroupExit, type GroupSpawn } from './process.ts';
import { seccompProgram } from './seccomp.ts';

/** Where the commands of a sandboxed run see their workspace. */
export const SANDBOX_WORKSPACE = '/workspace';
/** The run's HOME, inside its workspace so setup and agent share it. */
export const HOME_DIR_NAME = '.home';
/** PATH of a sandboxed command unless the environment sets its own. */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Top-level system directories shown read-only (or re-created as the symlinks they are). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt'];

/**
 * What of /etc a command sees: name resolution, certificates, the dynamic linker, time zone,
 * users and groups (names only; never shadow files), shells' and git's system settings.
 */
const ETC_ENTRIES = [
  'passwd', 'group', 'hosts', 'host.conf', 'hostname', 'nsswitch.conf', 'resolv.conf', 'gai.conf', 'services', 'protocols',
  'ssl', 'ca-certificates', 'ca-certificates.conf', 'pki', 'crypto-policies', 'alternatives',
  'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'localtime', 'timezone', 'os-release', 'lsb-release', 'debian_version',
  'mime.types', 'gitconfig', 'inputrc', 'profile', 'bash.bashrc', 'shells', 'locale.alias', 'locale.conf', 'fonts',
];

/**
 * TLS private keys inside the certificate directories shown above (Debian's /etc/ssl/private, the
 * RHEL family's under /etc/pki): covered, since a runtime in the group that may read them (a
 * common way to give a service its TLS key) would otherwise pass that group to its runs.
 */
const ETC_PRIVATE_DIRS = ['/etc/ssl/private', '/etc/pki/tls/private', '/etc/pki/CA/private'];

/**
 * The launcher: `$1...` is the command's argv. It first applies the command's variables, read
 * from fd 4 (`envScript`) when that is open: only here, inside the isolation and as the run's
 * user, do they take effect, never in bubblewrap or setpriv, which run before it on the host or as
 * root (a run's `PATH` or `LD_PRELOAD` there would run its own code outside the sandbox). It exits
 * 127 (126) after writing ENOENT (EACCES) on fd 3 when the program is missing (not executable),
 * and otherwise closes fd 3 and execs it.
 */
// Its own variables have names no environment uses and are unset before the exec, so a run's
// variable called `p` or `e` reaches the command as the run set it.
const LAUNCHER = [
  'if { true <&4; } 2>/dev/null; then _factory_env=$(cat <&4) || exit 126; exec 4<&-; eval "$_factory_env"; fi',
  '_factory_prog=$1',
  'case $_factory_prog in',
  '*/*) [ -e "$_factory_prog" ] || { echo ENOENT >&3; exit 127; }; { [ -f "$_factory_prog" ] && [ -x "$_factory_prog" ]; } || { echo EACCES >&3; exit 126; } ;;',
  '*) command -v -- "$_factory_prog" >/dev/null 2>&1 || { echo ENOENT >&3; exit 127; } ;;',
  'esac',
  'unset _factory_env _factory_prog',
  'exec 3>&-',
  'exec "$@"',
].join('\n');

/**
 * A git system config that trusts every repository (`safe.directory=*`), for the repo steps when
 * commands run as another user than the one owning a local repo: git refuses such a repository
 * as "dubious ownership" otherwise. The clone runs in the sandbox, so that trust reaches no
 * further than the run.
 */
export const SAFE_DIRECTORY_GITCONFIG = fileURLToPath(new URL('./safe-directory.gitconfig', import.meta.url));
const SAFE_DIRECTORY_IN_SANDBOX = '/etc/factory/safe-directory.gitconfig';

/** Everything a run's commands are started with, from the config (the same for every run). */
export interface Isolation {
  kind: ExecutorKind;
  sandbox: SandboxSettings;
  /** Set when the runtime is root: commands run as this user and group. */
  runAs?: { uid: number; gid: number };
  /** Never visible to a command: the data dir and the work dir. */
  hidden: readonly string[];
  /**
   * Covered with an empty tmpfs where a system directory shows them, before anything else is
   * bound (so a local repo inside one can still be cloned): the runtime's home and the directory
   * holding the data dir, when they lie inside `/opt`, `/usr` or another system directory
   * (a service installed as /opt/factory with its env file and keys beside its data dir).
   */
  covered: readonly string[];
  /** Where a repo given as a local path may lie; null: anywhere (config.localRepos). */
  localRepos: readonly string[] | null;
}

export function isolationOf(config: Config, home: string = os.homedir()): Isolation {
  return {
    kind: config.executor,
    sandbox: { ...config.sandbox, bwrap: findProgram(config.sandbox.bwrap, config.inheritedEnv.PATH) },
    ...(config.runAs ? { runAs: { ...config.runAs } } : {}),
    hidden: [config.dataDir, config.workDir],
    covered: coveredDirs([home, path.dirname(config.dataDir)]),
    localRepos: config.localRepos,
  };
}

/**
 * The mode of the directory that holds the runs' workspaces: 0711 only where run commands are
 * another user that reaches its workspace by path on the host (direct, runtime root), else 0700
 * (a sandboxed command sees its workspace at /workspace, never through this directory).
 */
export function workDirMode(iso: Isolation): number {
  return iso.kind === 'direct' && iso.runAs ? 0o711 : 0o700;
}

/**
 * Directories every program may need (installed tools, libraries, agents under `npm -g`): never
 * covered, even when the data dir sits right inside one (`/usr/local/factory`).
 */
const SHARED_DIRS = ['/usr/local', '/usr/lib', '/usr/lib32', '/usr/lib64', '/usr/libexec', '/usr/share', '/usr/bin', '/usr/sbin', '/usr/include', '/usr/src'];

/** Those of `dirs` strictly inside a system directory (never a system directory itself, a shared one, nor `/`). */
function coveredDirs(dirs: string[]): string[] {
  const out: string[] = [];
  for (const dir of dirs) {
    const abs = path.resolve(dir);
    if (SHARED_DIRS.includes(abs) || out.includes(abs)) continue;
    if (SYSTEM_DIRS.some((sys) => abs !== sys && isWithin(abs, sys))) out.push(abs);
  }
  return out;
}

/** How the host's root looks: which system directories exist, as directories or symlinks. */
interface HostLayout {
  dirs: string[];
  symlinks: { path: string; target: string }[];
  etc: string[];
  /** Directories of private keys inside the shown /etc entries (ETC_PRIVATE_DIRS), covered. */
  etcPrivate: string[];
  /** Absolute paths of setpriv and prlimit (util-linux), when found. */
  setpriv?: string;
  prlimit?: string;
}

let layoutCache: HostLayout | undefined;

function hostLayout(): HostLayout {
  if (layoutCache) return layoutCache;
  const layout: HostLayout = { dirs: [], symlinks: [], etc: [], etcPrivate: [] };
  for (const dir of SYSTEM_DIRS) {
    try {
      const st = lstatSync(dir);
      if (st.isSymbolicLink()) layout.symlinks.push({ path: dir, target: readlinkSync(dir) });
      else if (st.isDirectory()) layout.dirs.push(dir);
    } catch {
      // Not on this system.
    }
  }
  for (const name of ETC_ENTRIES) if (existsSync(`/etc/${name}`)) layout.etc.push(`/etc/${name}`);
  for (const dir of ETC_PRIVATE_DIRS) if (existsSync(dir)) layout.etcPrivate.push(dir);
  const find = (name: string) => ['/usr/bin', '/bin', '/usr/sbin', '/sbin'].map((d) => `${d}/${name}`).find((p) => existsSync(p));
  layout.setpriv = find('setpriv');
  layout.prlimit = find('prlimit');
  layoutCache = layout;
  return layout;
}

/**
 * The program a name without a slash means: the first executable file of that name on the
 * runtime's PATH, then on the sandbox's fixed PATH (docs/runtime.md#configuration); a name with a
 * slash, or one found nowhere, as given (spawning it then fails with ENOENT, which the start-up
 * check reports).
 */
export function findProgram(name: string, searchPath: string | undefined): string {
  if (name.includes('/')) return name;
  // Only absolute entries: an empty or relative one would mean the runtime's working directory.
  const dirs = [...(searchPath ?? '').split(':'), ...SANDBOX_PATH.split(':')].filter((dir) => path.isAbsolute(dir));
  return dirs.map((dir) => path.join(dir, name)).find(isExecutableFile) ?? name;
}

/** Is `p` a file this process may execute? */
export function isExecutableFile(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The real path of an existing file, or undefined. */
export function realPath(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

/** What one command needs besides its argv. */
export interface CommandOptions extends Omit<GroupSpawn, 'argv' | 'cwd' | 'env' | 'statusFd' | 'envScript'> {
  argv: string[];
  /** Host path of the working directory: inside the workspace, or a `sources` directory. */
  cwd: string;
  env: Record<string, string>;
  /** Whether the command may reach the network (sandbox only; direct commands always can). */
  network: boolean;
  /** Host directories shown read-only at their own path to this command only (a local repo to clone). */
  sources?: string[];
}

/**
 * The bubblewrap arguments for one command, ending with the command itself (after setpriv,
 * prlimit and the launcher). `workspace` is bound at /workspace; omitted, there is none (the probe).
 */
export function bwrapArgs(iso: Isolation, layout: HostLayout, opts: { workspace?: string; cwd: string; network: boolean; sources: string[]; argv: string[] }): string[] {
  const args = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--hostname', 'factory-run'];
  // As root, bubblewrap needs no user namespace, and one would map the command's user back to
  // root; as anyone else it needs one, and the command may not create further ones. Either way the
  // system-call filter, read from SECCOMP_FD, refuses the command a user namespace of its own.
  if (!iso.runAs) args.push('--unshare-user', '--disable-userns');
  args.push('--seccomp', String(SECCOMP_FD));
  if (!opts.network) args.push('--unshare-net');

  const visible: string[] = [];
  for (const dir of layout.dirs) {
    args.push('--ro-bind', dir, dir);
    visible.push(dir);
  }
  for (const link of layout.symlinks) args.push('--symlink', link.target, link.path);
  args.push('--perms', '0755', '--dir', '/etc');
  for (const entry of layout.etc) {
    args.push('--ro-bind', entry, entry);
    visible.push(entry);
  }
  // The runtime's home and install directory where a system directory shows them (Isolation.covered),
  // before the binds below, which stay visible on top (a local repo to clone, an operator's directory).
  for (const dir of iso.covered) {
    const real = realPath(dir);
    if (real === undefined) continue;
    for (const sys of layout.dirs) {
      const sysReal = realPath(sys);
      if (sysReal === undefined || real === sysReal || !isWithin(real, sysReal)) continue;
      args.push('--tmpfs', path.join(sys, path.relative(sysReal, real)));
    }
  }
  for (const dir of layout.etcPrivate) args.push('--tmpfs', dir);
  args.push('--dev', '/dev', '--proc', '/proc');
  args.push('--perms', '1777', '--size', String(iso.sandbox.memoryMb * 1024 * 1024), '--tmpfs', '/tmp');

  // Parents before children, so a later bind never hides an earlier one. Directories that
  // bubblewrap creates on the way are mode 0700, unreadable to another user: create them first.
  // An operator's directory must exist (the start-up check says so); a repo that does not is
  // left for git to report.
  const binds = [...iso.sandbox.roBinds.map((dir) => ({ dir, bind: '--ro-bind' })), ...opts.sources.map((dir) => ({ dir, bind: '--ro-bind-try' }))];
  for (const { dir, bind } of binds.sort((a, b) => a.dir.length - b.dir.length)) {
    args.push('--perms', '0755', '--dir', path.dirname(dir), bind, dir, dir);
    visible.push(dir);
  }
  // The data dir and other runs' workspaces: an empty tmpfs wherever something visible holds
  // them, compared by real path (a symlink must not smuggle them in), covered where they appear.
  for (const hidden of iso.hidden) {
    const real = realPath(hidden);
    if (real === undefined) continue;
    for (const v of visible) {
      const vReal = realPath(v);
      if (vReal === undefined) continue;
      if (isWithin(real, vReal)) {
        const rel = path.relative(vReal, real);
        args.push('--tmpfs', rel ? path.join(v, rel) : v);
      } else if (isWithin(vReal, real)) {
        // Something shown through a link that leads inside them (config checks the path as written).
        args.push('--tmpfs', v);
      }
    }
  }
  if (iso.runAs) args.push('--perms', '0755', '--dir', '/etc/factory', '--ro-bind', SAFE_DIRECTORY_GITCONFIG, SAFE_DIRECTORY_IN_SANDBOX);
  if (opts.workspace !== undefined) args.push('--bind', opts.workspace, SANDBOX_WORKSPACE);
  // The command's own variables come through the launcher (fd 4), not from bubblewrap's.
  args.push('--clearenv', '--setenv', 'PATH', SANDBOX_PATH);
  args.push('--chdir', opts.cwd, '--');

  if (iso.runAs) args.push(layout.setpriv!, `--reuid=${iso.runAs.uid}`, `--regid=${iso.runAs.gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--');
  const { memoryMb, maxProcesses, maxOpenFiles } = iso.sandbox;
  args.push(layout.prlimit!, `--data=${memoryMb * 1024 * 1024}`, `--nproc=${maxProcesses}`, `--nofile=${maxOpenFiles}`, '--');
  args.push('/bin/sh', '-c', LAUNCHER, 'factory-exec', ...opts.argv);
  return args;
}

/**
 * The commands of one run, with its workspace: paths as its commands see them, and `run`, which
 * starts a command under the run's isolation.
 */
export class RunSandbox {
  /** The workspace as the run's commands see it. */
  readonly workspaceInside: string;

  constructor(
    readonly iso: Isolation,
    /** Host path of the workspace. */
    readonly workspace: string,
  ) {
    this.workspaceInside = iso.kind === 'sandbox' ? SANDBOX_WORKSPACE : workspace;
  }

  get sandboxed(): boolean {
    return this.iso.kind === 'sandbox';
  }

  /**
   * Host path of the run's own HOME (`<workspace>/.home`), or undefined when commands keep the
   * runtime's HOME (direct, not root). A direct run as another user could not use root's HOME.
   */
  get homeDir(): string | undefined {
    return this.sandboxed || this.iso.runAs ? path.join(this.workspace, HOME_DIR_NAME) : undefined;
  }

  /** A host path as the commands see it: workspace paths move to /workspace, others stay. */
  inside(hostPath: string): string {
    if (!this.sandboxed || !isWithin(hostPath, this.workspace)) return hostPath;
    const rel = path.relative(this.workspace, hostPath);
    return rel ? path.posix.join(SANDBOX_WORKSPACE, rel.split(path.sep).join('/')) : SANDBOX_WORKSPACE;
  }

  /**
   * The variables every command starts from, before the environment's own: in the sandbox a
   * fixed PATH, HOME in the workspace, a private TMPDIR and the runtime's locale and time zone;
   * direct, the runtime's inherited variables as they are (HOME in the workspace as another user).
   */
  baseEnv(inherited: Readonly<Record<string, string>>): Record<string, string> {
    if (!this.sandboxed) return this.homeDir ? { ...inherited, HOME: this.homeDir } : { ...inherited };
    const env: Record<string, string> = { PATH: SANDBOX_PATH, HOME: path.posix.join(SANDBOX_WORKSPACE, HOME_DIR_NAME), TMPDIR: '/tmp', LANG: inherited.LANG ?? 'C.UTF-8' };
    for (const name of ['LC_ALL', 'LC_CTYPE', 'TZ']) if (inherited[name] !== undefined) env[name] = inherited[name];
    return env;
  }

  /** Variables for the repo steps (clone, checkout, copy) on top of the run's. */
  repoEnv(): Record<string, string> {
    if (!this.iso.runAs) return {};
    return { GIT_CONFIG_SYSTEM: this.sandboxed ? SAFE_DIRECTORY_IN_SANDBOX : SAFE_DIRECTORY_GITCONFIG };
  }

  /**
   * Runs one command under the run's isolation; see runInGroup for groups, timeouts and cancel.
   * A wrapped command's variables travel on fd 4 to the launcher (`envScript`); bubblewrap and
   * setpriv themselves start with `wrapperEnv` alone.
   */
  run(opts: CommandOptions): Promise<GroupExit> {
    const { argv, cwd, env, network, sources = [], ...rest } = opts;
    if (this.sandboxed) {
      const args = bwrapArgs(this.iso, hostLayout(), { workspace: this.workspace, cwd: this.inside(cwd), network, sources, argv });
      return runInGroup({ ...rest, argv: [this.iso.sandbox.bwrap, ...args], cwd: '/', env: wrapperEnv(env), envScript: envScript(env), statusFd: true, seccomp: machineFilter()! });
    }
    if (this.iso.runAs) {
      const { uid, gid } = this.iso.runAs;
      const setpriv = hostLayout().setpriv ?? 'setpriv';
      const wrapped = [setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', '--', '/bin/sh', '-c', LAUNCHER, 'factory-exec', ...argv];
      return runInGroup({ ...rest, argv: wrapped, cwd, env: wrapperEnv(env), envScript: envScript(env), statusFd: true });
    }
    // Direct as the runtime's own user: the command is the run's, with the run's variables.
    return runInGroup({ ...rest, argv, cwd, env });
  }
}

/** The system-call filter of this machine's architecture, built once; undefined without a table (the probe refuses then). */
function machineFilter(): Buffer | undefined {
  return (filter ??= seccompProgram());
}
let filter: Buffer | undefined;

/**
 * The environment of the wrapper programs (bubblewrap on the host, setpriv as root): the fixed
 * PATH they are found on (as the start-up probe finds them) and the run's id, the marker crash
 * recovery looks for in /proc (process.ts killOrphanGroup). Nothing the run's definitions set.
 */
function wrapperEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  return { PATH: SANDBOX_PATH, ...(env.FACTORY_RUN_ID !== undefined ? { FACTORY_RUN_ID: env.FACTORY_RUN_ID } : {}) };
}

/** A POSIX shell name a variable can be exported under. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * `env` as shell lines for the launcher to `eval`, so the command starts with exactly `env`: first
 * `unset` of what the launcher found that `env` does not hold (the wrappers' PATH and run id,
 * bubblewrap's PWD), then `command export NAME='value'` with every value single-quoted (a quote inside
 * written as '\''), so nothing in a value is ever read as shell. Names a shell cannot export are
 * left out (an environment's names are checked at compile; only an inherited variable of the
 * runtime's own could be such a name).
 */
function envScript(env: Readonly<Record<string, string>>): string {
  let script = '';
  for (const name of ['PATH', 'FACTORY_RUN_ID', 'PWD']) if (!(name in env)) script += `unset ${name}\n`;
  for (const [name, value] of Object.entries(env)) {
    // `command` keeps a variable the shell holds read-only (bash's UID, PPID) from ending the
    // launcher: that one export fails, as it would in any shell, and the others go on.
    if (SHELL_NAME.test(name)) script += `command export ${name}='${value.replace(/'/g, "'\\''")}' 2>/dev/null\n`;
  }
  return script;
}

/** Why commands cannot run as configured: the problem, and how to fix it, each a clause. */
export interface IsolationProblem {
  what: string;
  fix: string;
  /** Whether the direct executor would run (the problem is the sandbox's own). */
  sandboxOnly: boolean;
  /**
   * The operator's own sandbox setting is wrong (a `--sandbox-ro-bind` that does not exist, a limit
   * above the hard one): `dev` refuses instead of carrying on without a sandbox, since the fix is a
   * typo's, not a missing program's.
   */
  setting?: boolean;
}

/**
 * Checks once per process, at start, that commands can run as configured: for `sandbox`, that
 * bubblewrap starts a sandbox here (`bwrap ... true` with every option a run uses), and that
 * setpriv and prlimit exist where needed. Undefined when all is well.
 */
export function probeIsolation(iso: Isolation): IsolationProblem | undefined {
  const key = JSON.stringify(iso);
  if (!probeCache.has(key)) {
    const plan = probePlan(iso);
    probeCache.set(key, plan.done ? plan.problem : plan.judge(spawnSync(plan.bwrap, plan.args, { ...plan.options, encoding: 'utf8' })));
  }
  return probeCache.get(key);
}

/**
 * `probeIsolation` without blocking: bubblewrap's probe runs as a child process while the caller
 * goes on (`factory serve` starts it before it loads the runtime, and the executor awaits it
 * before its first run, docs/runtime.md#executor). One probe per process and isolation, whichever
 * form asks first.
 */
export function probeIsolationAsync(iso: Isolation): Promise<IsolationProblem | undefined> {
  const key = JSON.stringify(iso);
  if (probeCache.has(key)) return Promise.resolve(probeCache.get(key));
  let pending = probePending.get(key);
  if (!pending) {
    const plan = probePlan(iso);
    pending = plan.done ? Promise.resolve(plan.problem) : spawnCollect(plan.bwrap, plan.args, plan.options).then(plan.judge);
    pending = pending.then((problem) => {
      probeCache.set(key, problem);
      probePending.delete(key);
      return problem;
    });
    probePending.set(key, pending);
  }
  return pending;
}
const probeCache = new Map<string, IsolationProblem | undefined>();
const probePending = new Map<string, Promise<IsolationProblem | undefined>>();

/** What `spawnSync` answers, as far as the probe reads it. */
interface ProbeResult {
  error?: Error;
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The probe's descriptors: output on 1 and 2, nothing on 3 and 4, the system-call filter's file on SECCOMP_FD. */
type ProbeStdio = ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', number];

type ProbePlan =
  | { done: true; problem: IsolationProblem | undefined }
  | { done: false; bwrap: string; args: string[]; options: { env: NodeJS.ProcessEnv; timeout: number; stdio: ProbeStdio }; judge(r: ProbeResult): IsolationProblem | undefined };

/** The probe up to its bubblewrap process (the checks that need none are answered at once), and how to read that process's result. */
function probePlan(iso: Isolation): ProbePlan {
  const layout = hostLayout();
  if (iso.runAs && !layout.setpriv) {
    return { done: true, problem: { what: 'the runtime runs as root and starts run commands as another user with setpriv, which was not found', fix: 'install util-linux (apt-get install util-linux)', sandboxOnly: false } };
  }
  if (iso.kind !== 'sandbox') return { done: true, problem: undefined };
  const bwrap = iso.sandbox.bwrap;
  if (!layout.prlimit) return { done: true, problem: { what: 'the sandbox sets its limits with prlimit, which was not found', fix: 'install util-linux (apt-get install util-linux)', sandboxOnly: true } };
  const program = machineFilter();
  if (!program) {
    return { done: true, problem: { what: `the sandbox's system-call filter has no table for this machine's architecture (${process.arch})`, fix: 'run the runtime on x86_64 or arm64', sandboxOnly: true } };
  }
  // bubblewrap would say only "Can't find source path": named here as the setting it is.
  for (const dir of iso.sandbox.roBinds) {
    if (!realPath(dir) || !lstatSync(realPath(dir)!).isDirectory()) {
      return { done: true, problem: { what: `--sandbox-ro-bind ${dir} is not a directory on this machine`, fix: 'correct the path or leave it out', sandboxOnly: true, setting: true } };
    }
  }
  // A directory standing in for a workspace, so the probe binds what a run binds; gone once judged.
  // The filter goes in as a file here (spawnSync writes to no descriptor but stdin), outside the
  // directory bound as the workspace.
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'factory-probe-'));
  const workspace = path.join(scratch, 'workspace');
  let args: string[];
  let filterFd: number;
  try {
    mkdirSync(workspace);
    const filterFile = path.join(scratch, 'seccomp.bpf');
    writeFileSync(filterFile, program);
    filterFd = openSync(filterFile, 'r');
    args = bwrapArgs(iso, layout, { workspace, cwd: SANDBOX_WORKSPACE, network: false, sources: [], argv: ['true'] });
  } catch (err) {
    rmSync(scratch, { recursive: true, force: true });
    throw err;
  }
  return {
    done: false,
    bwrap,
    args,
    options: { env: { PATH: SANDBOX_PATH }, timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe', 'ignore', 'ignore', filterFd] },
    judge(r) {
      closeSync(filterFd);
      rmSync(scratch, { recursive: true, force: true });
      if (r.error) {
        const code = (r.error as NodeJS.ErrnoException).code;
        const where = bwrap.includes('/') ? '' : ` on PATH or in ${SANDBOX_PATH.split(':').join(', ')}`;
        const what = code === 'ENOENT' ? `bubblewrap (${bwrap}) was not found${where}` : `bubblewrap (${bwrap}) could not be started (${code ?? r.error.message})`;
        return { what, fix: 'install it (apt-get install bubblewrap)', sandboxOnly: true };
      }
      if (r.status !== 0) {
        const why = (r.stderr || r.stdout || `exit status ${r.status ?? r.signal}`).trim().split('\n')[0];
        if (/unknown option/i.test(why)) {
          return { what: `bubblewrap (${bwrap}) is too old for the sandbox's options (${why})`, fix: 'install bubblewrap 0.8 or later (bwrap --version)', sandboxOnly: true };
        }
        if (/system call filtering|seccomp/i.test(why)) {
          return { what: `bubblewrap (${bwrap}) cannot install the sandbox's system-call filter here (${why})`, fix: 'use a kernel built with seccomp filters (CONFIG_SECCOMP_FILTER) and, in a container, a seccomp profile that lets a process add its own', sandboxOnly: true };
        }
        if (why.startsWith('prlimit')) {
          return { what: `the sandbox's limits cannot be set here (${why})`, fix: 'lower --sandbox-memory-mb, --sandbox-max-processes or --sandbox-max-open-files to this user\'s hard limits (ulimit -H -a)', sandboxOnly: true };
        }
        const fix = iso.runAs ? 'check that this kernel and container allow namespaces (bwrap --version, and the container\'s seccomp and capabilities)' : 'allow unprivileged user namespaces, or run the runtime as root';
        return { what: `bubblewrap (${bwrap}) cannot create its sandbox here (${why})`, fix, sandboxOnly: true };
      }
      return undefined;
    },
  };
}

/** `spawnSync`'s result, without blocking: the process's exit status, signal, output, or its spawn error (never rejects). */
function spawnCollect(file: string, args: string[], options: { env: NodeJS.ProcessEnv; timeout: number; stdio: ProbeStdio }): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let error: Error | undefined;
    const { timeout, ...spawnOptions } = options;
    const child = spawn(file, args, spawnOptions);
    // As spawnSync does: past the timeout the process is killed and the result is an ETIMEDOUT error.
    const timer = setTimeout(() => {
      error ??= Object.assign(new Error(`${file} timed out`), { code: 'ETIMEDOUT' });
      child.kill('SIGKILL');
    }, timeout);
    child.stdout?.on('data', (b: Buffer) => out.push(b));
    child.stderr?.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      error ??= e;
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ error, status, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/** The probe's outcome as the one sentence `serve` stops with. */
export function assertIsolation(iso: Isolation): void {
  const p = probeIsolation(iso);
  if (p) throw isolationError(p);
}

/** `assertIsolation` through `probeIsolationAsync`. */
export async function assertIsolationAsync(iso: Isolation): Promise<void> {
  const p = await probeIsolationAsync(iso);
  if (p) throw isolationError(p);
}

/** The one sentence of a start refused for `p` (serve, worker, and dev for a wrong setting). */
export function isolationError(p: IsolationProblem): CliError {
  const direct = p.sandboxOnly ? ', or pass --executor direct to run commands without a sandbox, knowingly (docs/security.md#executors)' : '';
  return new CliError(`runs cannot start: ${p.what}; ${p.fix}${direct}.`);
}
