/**
 * Decrypted webhook secrets, cached per (name, version) so the hot path does not run AES-GCM
 * on every delivery. A webhook is bound to one version (docs/ingress.md#webhook-lifecycle); rotate,
 * update + enable and set-secret bind a new version, which is a new cache key, so nothing needs
 * invalidating: old entries are simply never asked for again (and fall out when the cache is full).
 * Entries also expire after MAX_AGE_MS: a secret deleted and re-created under the same name
 * restarts at version 1 with another value, which the key alone would not notice.
 */
export class SecretCache {
  static readonly MAX_AGE_MS = 60_000;
  private readonly entries = new Map<string, { value: string; at: number }>();

  constructor(
    private readonly reveal: (name: string, version: number) => string | undefined,
    private readonly nowMs: () => number = Date.now,
    private readonly max = 1000,
  ) {}

  /** Forgets every value: another replica deleted or re-created a secret (docs/deploy.md#several-replicas). */
  clear(): void {
    this.entries.clear();
  }

  get(name: string, version: number): string | undefined {
    const key = `${version}\u0000${name}`;
    const now = this.nowMs();
    const hit = this.entries.get(key);
    if (hit && now - hit.at < SecretCache.MAX_AGE_MS && now >= hit.at) return hit.value;
    const value = this.reveal(name, version);
    // A missing value (pending secret) is not cached: set-secret may give it one.
    if (value === undefined) {
      this.entries.delete(key);
      return undefined;
    }
    if (!hit && this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, at: now });
    return value;
  }
}
