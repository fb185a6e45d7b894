import { posix } from 'node:path';

/**
 * What is wrong with an environment's repo (docs/definitions.md#decisions), in words, or
 * undefined: a url or ref that git would read as an option, and an http(s) URL that carries a user
 * name or password (a token there would be shown in every clone command of the run's transcript,
 * its status message and the logs). An ssh user such as `git@` is fine. A path that leaves the
 * run's workspace (absolute, or through `..`) is refused too, as the executor would refuse it.
 * The compiler and the runtime's apply check both ask this.
 */
export function repoProblems(repo: { url?: unknown; ref?: unknown; path?: unknown }): { key: 'url' | 'ref' | 'path'; message: string }[] {
  const out: { key: 'url' | 'ref' | 'path'; message: string }[] = [];
  // The executor's own rule (runtime/executor/workspace.ts repoTarget), checked before any run.
  if (typeof repo.path === 'string') {
    const inside = posix.relative('/workspace', posix.resolve('/workspace', repo.path));
    if (inside === '' || inside.startsWith('..') || posix.isAbsolute(inside) || posix.isAbsolute(repo.path)) {
      out.push({ key: 'path', message: `a repo path must be a directory inside the run's workspace, relative to it, got "${repo.path}"` });
    }
  }
  if (typeof repo.url === 'string') {
    if (repo.url.startsWith('-')) out.push({ key: 'url', message: `a repo url starting with "-" would be read by git as an option, got "${repo.url}"` });
    else if (/^https?:\/\//i.test(repo.url)) {
      let u: URL | undefined;
      try {
        u = new URL(repo.url);
      } catch {
        u = undefined;
      }
      if (u && (u.username || u.password)) {
        out.push({ key: 'url', message: 'a repo URL must not carry a user name or token: it would show in the run\'s transcript and status; give credentials through env (GIT_CONFIG_COUNT with an http.extraHeader secret)' });
      }
    }
  }
  if (typeof repo.ref === 'string' && repo.ref.startsWith('-')) out.push({ key: 'ref', message: `a ref starting with "-" would be read by git as an option, got "${repo.ref}"` });
  return out;
}
