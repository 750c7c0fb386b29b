import type { Step } from './types';

const Z26 = '0'.repeat(26);

/**
 * The drive's file tools (and sites and code): each step makes what it needs under a folder of
 * its own run (`tools-<run>`), so that the two clients' runs do not meet.
 */
export const STEPS: Step[] = [
  {
    tool: 'drive_make_folders',
    valid: (s) => ({ path: `tools-${s.run}/docs` }),
    invalid: () => ({ path: 'a/../b' }),
    keep: (s, b) => (s.toolsDocs = b.id),
  },
  {
    tool: 'drive_write_text',
    valid: (s) => ({ path: `tools-${s.run}/docs/notes.md`, content: '# Notes\nalpha\nbeta\n' }),
    invalid: (s) => ({ path: `tools-${s.run}/docs/notes.md`, content: 'x', ifNoneMatch: '*' }),
    keep: (s, b) => (s.notesId = b.id),
  },
  {
    tool: 'drive_stat',
    // A JSON file and a CSV file for the steps below, written through the API.
    before: async (s, t, key) => {
      s.jsonId = (await t.ok('PUT', '/drive/text', key, { path: `tools-${s.run}/data.json`, content: '{"name":"svc","list":[1]}' })).body.id;
      s.csvId = (await t.ok('PUT', '/drive/text', key, { path: `tools-${s.run}/table.csv`, content: 'a,b\n1,2\n' })).body.id;
    },
    valid: (s) => ({ path: `tools-${s.run}/docs/notes.md` }),
    invalid: (s) => ({ path: `tools-${s.run}/missing.md` }),
  },
  { tool: 'drive_ancestors', valid: (s) => ({ id: s.notesId }), invalid: () => ({ id: `file_${Z26}` }) },
  { tool: 'drive_tree', valid: (s) => ({ folderId: s.toolsDocs, maxDepth: 2 }), invalid: () => ({ maxDepth: 0 }) },
  { tool: 'drive_find', valid: () => ({ name: '*.md' }), invalid: () => ({ name: 'x', kind: 'link' }) },
  { tool: 'drive_recent', valid: () => ({ limit: 5 }), invalid: () => ({ cursor: 'nope' }) },
  { tool: 'drive_usage', valid: () => ({}), invalid: () => ({ projectId: 'bad project' }) },
  { tool: 'drive_duplicates', valid: () => ({}), invalid: () => ({ minSize: -1 }) },
  { tool: 'drive_folder_size', valid: (s) => ({ id: s.toolsDocs }), invalid: () => ({ id: `fld_${Z26}` }) },
  { tool: 'drive_grep', valid: (s) => ({ pattern: 'alpha', folderId: s.toolsDocs }), invalid: () => ({ pattern: '(', regex: 'true' }) },
  { tool: 'drive_read_lines', valid: (s) => ({ id: s.notesId, start: 2, end: 3 }), invalid: (s) => ({ id: s.notesId, start: 0 }) },
  { tool: 'drive_text_stats', valid: (s) => ({ id: s.notesId }), invalid: () => ({ id: `file_${Z26}` }) },
  { tool: 'drive_read_csv', valid: (s) => ({ id: s.csvId }), invalid: (s) => ({ id: s.csvId, delimiter: ';;' }) },
  { tool: 'drive_diff', valid: (s) => ({ from: s.notesId, to: s.csvId }), invalid: (s) => ({ from: s.notesId }) },
  { tool: 'drive_append', valid: (s) => ({ id: s.notesId, text: 'gamma', newline: true }), invalid: (s) => ({ id: s.notesId, text: '' }) },
  {
    tool: 'drive_edit',
    valid: (s) => ({ id: s.notesId, find: 'alpha', replace: 'ALPHA' }),
    invalid: (s) => ({ id: s.notesId, find: 'not in the file', replace: 'x' }),
  },
  {
    tool: 'drive_replace_lines',
    valid: (s) => ({ id: s.notesId, start: 1, end: 1, text: '# Title' }),
    invalid: (s) => ({ id: s.notesId, start: 3, end: 1, text: '' }),
  },
  { tool: 'drive_insert_lines', valid: (s) => ({ id: s.notesId, after: 0, text: 'top' }), invalid: (s) => ({ id: s.notesId, after: -1, text: 'x' }) },
  { tool: 'drive_read_json', valid: (s) => ({ id: s.jsonId, pointer: '/name' }), invalid: (s) => ({ id: s.jsonId, pointer: '/missing' }) },
  {
    tool: 'drive_set_json',
    valid: (s) => ({ id: s.jsonId, pointer: '/list/-', value: 2 }),
    invalid: (s) => ({ id: s.jsonId, pointer: 'no-slash', value: 1 }),
  },
  { tool: 'drive_merge_json', valid: (s) => ({ id: s.jsonId, patch: { extra: true } }), invalid: (s) => ({ id: s.jsonId, patch: 'x' }) },
  { tool: 'drive_delete_json', valid: (s) => ({ id: s.jsonId, pointer: '/extra' }), invalid: (s) => ({ id: s.jsonId, pointer: '' }) },
  {
    tool: 'drive_versions_list',
    valid: (s) => ({ id: s.notesId }),
    invalid: (s) => ({ id: s.toolsDocs }),
    keep: (s, b) => (s.versionId = b.versions[0].id),
  },
  {
    tool: 'drive_versions_get',
    valid: (s) => ({ id: s.notesId, versionId: s.versionId }),
    invalid: (s) => ({ id: s.notesId, versionId: `ver_${Z26}` }),
  },
  {
    tool: 'drive_versions_restore',
    valid: (s) => ({ id: s.notesId, versionId: s.versionId }),
    invalid: (s) => ({ id: s.notesId, versionId: 'nope' }),
  },
  {
    tool: 'drive_versions_delete',
    valid: (s) => ({ id: s.notesId, versionId: s.versionId }),
    invalid: (s) => ({ id: s.notesId, versionId: 'nope' }),
  },
  { tool: 'drive_tags_set', valid: (s) => ({ id: s.notesId, tags: ['notes', 'draft'] }), invalid: (s) => ({ id: s.notesId, tags: ['-bad'] }) },
  { tool: 'drive_tags_add', valid: (s) => ({ id: s.csvId, tags: ['notes'] }), invalid: (s) => ({ id: s.csvId, tags: [] }) },
  { tool: 'drive_tags_get', valid: (s) => ({ id: s.notesId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'drive_tags_remove', valid: (s) => ({ id: s.notesId, tag: 'draft' }), invalid: () => ({ id: `file_${Z26}`, tag: 'draft' }) },
  { tool: 'drive_tags_list', valid: () => ({}), invalid: () => ({ projectId: 'bad project' }) },
  { tool: 'drive_tags_items', valid: () => ({ tag: 'notes' }), invalid: () => ({ tag: '' }) },
  { tool: 'drive_copy', valid: (s) => ({ id: s.notesId }), invalid: (s) => ({ id: s.notesId, name: '' }), keep: (s, b) => (s.copyId = b.id) },
  { tool: 'drive_zip', valid: (s) => ({ id: s.toolsDocs }), invalid: (s) => ({ id: s.notesId }), keep: (s, b) => (s.zipId = b.id) },
  { tool: 'drive_extract', valid: (s) => ({ id: s.zipId }), invalid: (s) => ({ id: s.notesId }) },
  {
    tool: 'drive_batch_move',
    valid: (s) => ({ ids: [s.copyId], parentId: s.toolsDocs }),
    invalid: () => ({ ids: [], parentId: null }),
  },
  { tool: 'drive_batch_tag', valid: (s) => ({ ids: [s.notesId, s.csvId], add: ['batch'] }), invalid: (s) => ({ ids: [s.notesId] }) },
  { tool: 'drive_read_many', valid: (s) => ({ ids: [s.notesId, s.csvId] }), invalid: () => ({ ids: [] }) },
  { tool: 'drive_batch_delete', valid: (s) => ({ ids: [s.copyId, s.zipId] }), invalid: () => ({ ids: ['nope'] }) },
  // Sites: a site with two deployments, made through the API.
  {
    tool: 'sites_update',
    before: async (s, t, key) => {
      s.siteId = (await t.ok('POST', '/sites', key, { slug: `tool-site-${s.run}` })).body.id;
      const deploy = (files: Record<string, string>) =>
        t.ok('POST', `/sites/${s.siteId}/deployments`, key, { files: Object.entries(files).map(([path, content]) => ({ path, content })) });
      s.dep1 = (await deploy({ 'index.html': '<a href="gone.html">x</a>', 'old.txt': 'old' })).body.id;
      s.dep2 = (await deploy({ 'index.html': '<a href="about.html">x</a>' })).body.id;
    },
    valid: (s) => ({ id: s.siteId, title: 'Tools', spaFallback: true }),
    invalid: (s) => ({ id: s.siteId, slug: 'Not A Slug' }),
  },
  { tool: 'sites_deployments_diff', valid: (s) => ({ id: s.siteId, from: s.dep1 }), invalid: (s) => ({ id: s.siteId, from: 'nope' }) },
  { tool: 'sites_files_read', valid: (s) => ({ id: s.siteId, path: 'index.html' }), invalid: (s) => ({ id: s.siteId, path: 'missing.html' }) },
  { tool: 'sites_links_check', valid: (s) => ({ id: s.siteId, deploymentId: s.dep1 }), invalid: () => ({ id: `site_${Z26}` }) },
  { tool: 'sites_redirects_add', valid: (s) => ({ id: s.siteId, from: '/old', to: '/' }), invalid: (s) => ({ id: s.siteId, from: '/x', to: '/x' }) },
  {
    tool: 'sites_redirects_replace',
    valid: (s) => ({ id: s.siteId, redirects: [{ from: '/a', to: '/b' }] }),
    invalid: (s) => ({ id: s.siteId, redirects: [{ from: 'a', to: '/b' }] }),
  },
  { tool: 'sites_redirects_list', valid: (s) => ({ id: s.siteId }), invalid: () => ({ id: 'nope' }) },
  { tool: 'sites_redirects_delete', valid: (s) => ({ id: s.siteId, from: '/a' }), invalid: (s) => ({ id: s.siteId, from: '' }) },
  {
    tool: 'sites_deployments_delete',
    valid: (s) => ({ id: s.siteId, deploymentId: s.dep1 }),
    invalid: (s) => ({ id: s.siteId, deploymentId: s.dep2 }), // the one served: 409
  },
  // Custom domains: a verification finds no TXT record here (nothing answers for example.com's
  // challenge), so the domain stays pending: a result, not an error.
  {
    tool: 'sites_domains_add',
    valid: (s) => ({ id: s.siteId, domain: `tools-${s.run}.example.com` }),
    invalid: (s) => ({ id: s.siteId, domain: 'localhost' }),
  },
  { tool: 'sites_domains_list', valid: (s) => ({ id: s.siteId }), invalid: () => ({ id: `site_${Z26}` }) },
  {
    tool: 'sites_domains_verify',
    valid: (s) => ({ id: s.siteId, domain: `tools-${s.run}.example.com` }),
    invalid: (s) => ({ id: s.siteId, domain: 'not-added.example.com' }),
  },
  {
    tool: 'sites_domains_delete',
    valid: (s) => ({ id: s.siteId, domain: `tools-${s.run}.example.com` }),
    invalid: (s) => ({ id: s.siteId, domain: 'a_b' }),
  },
  // Code over the drive.
  { tool: 'code_check', valid: () => ({ code: 'const x = 1;\nx' }), invalid: () => ({ code: '' }) },
  {
    tool: 'code_run_file',
    before: async (s, t, key) => {
      s.scriptId = (await t.ok('PUT', '/drive/text', key, { path: `tools-${s.run}/double.js`, content: 'input.n * 2' })).body.id;
    },
    valid: (s) => ({ fileId: s.scriptId, input: { n: 21 } }),
    invalid: () => ({ fileId: `file_${Z26}` }),
  },
  {
    tool: 'code_run_with_data',
    valid: (s) => ({ code: 'files.length', dataFileIds: [s.scriptId] }),
    invalid: () => ({ code: '1' }),
  },
  // CSV writes, a version's diff, locks and custom properties.
  {
    tool: 'drive_write_csv',
    valid: (s) => ({ path: `tools-${s.run}/out.csv`, columns: ['a', 'b'], rows: [[1, 'x, y']] }),
    invalid: (s) => ({ path: `tools-${s.run}/out2.csv`, rows: 'nope' }),
    keep: (s, b) => (s.outCsv = b.id),
  },
  { tool: 'drive_append_csv', valid: (s) => ({ id: s.outCsv, rows: [[2, 'z']] }), invalid: (s) => ({ id: s.outCsv, rows: [] }) },
  {
    tool: 'drive_versions_diff',
    before: async (s, t, key) => {
      s.csvVersion = (await t.ok('GET', `/drive/${s.outCsv}/versions`, key)).body.versions[0].id;
    },
    valid: (s) => ({ id: s.outCsv, versionId: s.csvVersion }),
    invalid: (s) => ({ id: s.outCsv, versionId: `ver_${Z26}` }),
  },
  {
    tool: 'drive_properties_set',
    valid: (s) => ({ id: s.outCsv, name: 'status', value: 'final' }),
    invalid: (s) => ({ id: s.outCsv, name: '1 bad', value: 'x' }),
  },
  { tool: 'drive_properties_list', valid: (s) => ({ id: s.outCsv }), invalid: () => ({ id: `file_${Z26}` }) },
  { tool: 'drive_properties_delete', valid: (s) => ({ id: s.outCsv, name: 'status' }), invalid: (s) => ({ id: s.outCsv }) },
  {
    tool: 'drive_locks_list',
    // A WebDAV client's lock on the file, taken with the same key.
    before: async (s, t, key) => {
      const res = await fetch(`${t.url}/dav/tools-${s.run}/out.csv`, {
        method: 'LOCK',
        headers: { authorization: `Basic ${Buffer.from(`x:${key}`).toString('base64')}`, 'content-type': 'application/xml' },
        body:
          '<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>' +
          '<D:locktype><D:write/></D:locktype></D:lockinfo>',
      });
      s.lockToken = (res.headers.get('lock-token') ?? '').replace(/^<|>$/g, '');
    },
    valid: (s) => ({ id: s.outCsv }),
    invalid: () => ({ id: 'nope' }),
  },
  {
    tool: 'drive_locks_release',
    valid: (s) => ({ id: s.outCsv, token: s.lockToken }),
    invalid: (s) => ({ id: s.outCsv, token: 'urn:uuid:00000000-0000-0000-0000-000000000000' }),
  },
];
