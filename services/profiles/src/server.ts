import { AccountLimiter, type Handlers } from '@svc/kit';
import type { profiles } from '@svc/proto';

import type { ProfilesDomain } from './profiles/index.js';
import { parseJson } from './profiles/input.js';

type Def = typeof profiles.ProfilesServiceService;

const reply = (r: { result: unknown; etag: string }) => ({ json: JSON.stringify(r.result), etag: r.etag });

/** gRPC handlers: translate messages (JSON documents travel as text), let the domain decide. */
export function handlers(domain: ProfilesDomain, limits: { mergesPerAccount: number }): Handlers<Def> {
  // Merges and diffs compare whole snapshots: capped per account (docs/reliability.md, "Fair shares").
  const merges = new AccountLimiter({
    name: 'profile_merges',
    what: 'profile merges and diffs (merge, diff, revert, cherry-pick)',
    perAccount: limits.mergesPerAccount,
  });
  return {
    async createProfile(req, ctx) {
      const doc = await domain.create(ctx.principal, parseJson(req.bodyJson));
      return { profileJson: doc.json, etag: doc.etag };
    },
    async listProfiles(req, ctx) {
      const { profiles: rows, nextCursor } = await domain.list(ctx.principal, req);
      return {
        profiles: rows.map((r) => ({ ...r, projectId: r.projectId ?? undefined })),
        nextCursor,
      };
    },
    async getProfile(req, ctx) {
      const doc = await domain.get(ctx.principal, req.id, { snapshots: req.snapshots });
      return { profileJson: doc.json, etag: doc.etag };
    },
    async updateProfile(req, ctx) {
      const doc = await domain.update(ctx.principal, req.id, parseJson(req.patchJson), req.ifMatch, { snapshots: req.snapshots });
      return { profileJson: doc.json, etag: doc.etag };
    },
    async deleteProfile(req, ctx) {
      await domain.remove(ctx.principal, req.id, req.ifMatch);
      return {};
    },
    async commit(req, ctx) {
      return reply(await domain.commit(ctx.principal, req.id, { message: req.message, branchId: req.branchId }, req.ifMatch));
    },
    async createBranch(req, ctx) {
      return reply(
        await domain.createBranch(
          ctx.principal,
          req.id,
          { name: req.name, description: req.description, parentBranchId: req.parentBranchId },
          req.ifMatch,
        ),
      );
    },
    async deleteBranch(req, ctx) {
      return reply(await domain.deleteBranch(ctx.principal, req.id, req.branchId, req.ifMatch));
    },
    async checkout(req, ctx) {
      const doc = await domain.checkout(ctx.principal, req.id, req.branchId, req.ifMatch, { snapshots: req.snapshots });
      return { profileJson: doc.json, etag: doc.etag };
    },
    async rollback(req, ctx) {
      const input = { versionId: req.versionId, branchId: req.branchId, message: req.message };
      return reply(await domain.rollback(ctx.principal, req.id, input, req.ifMatch));
    },
    async merge(req, ctx) {
      return merges.run(ctx.principal, () => domain.merge(ctx.principal, req.id, parseJson(req.bodyJson), req.ifMatch));
    },
    async getLog(req, ctx) {
      return { json: JSON.stringify(await domain.log(ctx.principal, req.id, req)), etag: '' };
    },
    async getDiff(req, ctx) {
      return { json: await merges.run(ctx.principal, () => domain.diff(ctx.principal, req.id, req)), etag: '' };
    },
    async getVersion(req, ctx) {
      return { json: await domain.version(ctx.principal, req.id, req.versionId), etag: '' };
    },
    async listBranches(req, ctx) {
      return { json: JSON.stringify(await domain.listBranches(ctx.principal, req.id)), etag: '' };
    },
    async getBranch(req, ctx) {
      return { json: JSON.stringify(await domain.getBranch(ctx.principal, req.id, req.branchId ?? '')), etag: '' };
    },
    async updateBranch(req, ctx) {
      const body = parseJson(req.bodyJson ?? '{}') as { name?: string; description?: string | null };
      return reply(await domain.updateBranch(ctx.principal, req.id, req.branchId ?? '', body, req.ifMatch));
    },
    async resetBranch(req, ctx) {
      return reply(await domain.resetBranch(ctx.principal, req.id, req.branchId ?? '', req.versionId ?? '', req.ifMatch));
    },
    async stageItem(req, ctx) {
      const body = parseJson(req.bodyJson ?? '{}') as { item?: unknown };
      return reply(await domain.stageItem(ctx.principal, req.id, req.kind ?? '', body.item, req.ifMatch));
    },
    async unstageItem(req, ctx) {
      return reply(await domain.unstageItem(ctx.principal, req.id, req.kind ?? '', req.itemId ?? '', req.ifMatch));
    },
    async discardWorkingChanges(req, ctx) {
      return reply(await domain.discardWorking(ctx.principal, req.id, req.ifMatch));
    },
    async searchItems(req, ctx) {
      const body = parseJson(req.bodyJson ?? '{}') as { q?: string; kind?: string; limit?: number };
      const input = { query: body.q ?? '', kind: body.kind, versionId: req.versionId, limit: body.limit };
      return { json: JSON.stringify(await domain.search(ctx.principal, req.id, input)), etag: '' };
    },
    async getStats(req, ctx) {
      return { json: JSON.stringify(await domain.stats(ctx.principal, req.id)), etag: '' };
    },
    async duplicateProfile(req, ctx) {
      const body = parseJson(req.bodyJson ?? '{}') as { name?: string };
      const doc = await domain.duplicate(ctx.principal, req.id, { name: body.name });
      return { profileJson: doc.json, etag: doc.etag };
    },
    async revertVersion(req, ctx) {
      const body = parseJson(req.bodyJson ?? '{}') as { message?: string };
      const input = { versionId: req.versionId ?? '', branchId: req.branchId, message: body.message };
      return reply(await merges.run(ctx.principal, () => domain.revert(ctx.principal, req.id, input, req.ifMatch)));
    },
    async cherryPick(req, ctx) {
      const body = parseJson(req.bodyJson ?? '{}') as { message?: string };
      const input = { versionId: req.versionId ?? '', branchId: req.branchId, message: body.message };
      return reply(await merges.run(ctx.principal, () => domain.cherryPick(ctx.principal, req.id, input, req.ifMatch)));
    },
    async listTags(req, ctx) {
      return { json: JSON.stringify(await domain.listTags(ctx.principal, req.id)), etag: '' };
    },
    async createTag(req, ctx) {
      const body = parseJson(req.bodyJson ?? '{}') as { name?: string; message?: string };
      return reply(
        await domain.createTag(ctx.principal, req.id, { name: body.name ?? '', versionId: req.versionId, message: body.message }, req.ifMatch),
      );
    },
    async deleteTag(req, ctx) {
      return reply(await domain.deleteTag(ctx.principal, req.id, req.itemId ?? '', req.ifMatch));
    },
    async listVersions(req, ctx) {
      const body = parseJson(req.bodyJson ?? '{}') as {
        authorId?: string;
        q?: string;
        since?: string;
        until?: string;
        limit?: number;
        cursor?: string;
      };
      return { json: JSON.stringify(await domain.findVersions(ctx.principal, req.id, { ...body, branchId: req.branchId })), etag: '' };
    },
    async exportHistory(req, ctx) {
      const json = await domain.exportHistory(ctx.principal, req.id, { snapshotVersionIds: req.snapshotVersionIds, maxBytes: req.maxBytes });
      return { json, etag: '' };
    },
  };
}
