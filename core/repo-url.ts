/**
 * What is wrong with an environment's repo (docs/definitions.md#decisions), in words, or
 * undefined: a url or ref that git would read as an option, and an http(s) URL that carries a user
 * name or password (a token there would be shown in every clone command of the run's transcript,
 * its status message and the logs). An ssh user such as `git@` is fine. The compiler and the
 * runtime's apply check both ask this.
 */
export function repoProblems(repo: { url?: unknown; ref?: unknown }): { key: 'url' | 'ref'; message: string }[] {
  const out: { key: 'url' | 'ref'; message: string }[] = [];
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
