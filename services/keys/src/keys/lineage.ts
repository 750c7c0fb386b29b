/**
 * Lineage is authority (docs/keys.md): a key never outlives the key that created it. Creation caps
 * a child's expiry here (keys.ts, in the creating transaction, its parent's row locked); revocation
 * goes down the tree in the store (KeyStore.revokeDescendants); keys from before the rule are
 * brought under it by the migration's LINEAGE_REPAIR_SQL.
 */

/**
 * A child key's expiry: the one asked for, unless the parent's comes first (a parent that never
 * expires caps nothing; a child asking for no expiry under a parent that has one gets the parent's).
 */
export function capExpiry(asked: Date | null, parent: Date | null): { expiresAt: Date | null; capped: boolean } {
  if (!parent || (asked && asked.getTime() <= parent.getTime())) return { expiresAt: asked, capped: false };
  return { expiresAt: parent, capped: true };
}
