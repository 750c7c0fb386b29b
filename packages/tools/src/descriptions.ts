/**
 * Titles and descriptions written for a model, for the tools of the default surface (defaults.ts):
 * what the tool does, when to use it, what it answers, and an example. The other tools keep their
 * route's summary (catalogue.ts).
 */
export const WRITTEN: Readonly<Record<string, { title: string; description: string }>> = {
  whoami: {
    title: 'Who am I',
    description:
      'Who the caller is: person or agent, the account and key in use, the project a key is scoped to, and the organizations reachable. ' +
      'Use it first to learn which account your calls act in. Example: {}.',
  },
  get_credits: {
    title: 'Credit balance',
    description:
      "The account's credit balance (what is left to spend on models) and its recent entries, grants and charges, newest first. " +
      'Example: {"limit": 10}.',
  },
  list_models: {
    title: 'List models',
    description:
      'The language models (LLMs) this account can use, with their provider, context window and price per token. ' +
      'Use it to pick a model for an agent. Example: {}.',
  },
  list_threads: {
    title: 'List threads',
    description:
      'Your threads (conversations with agents), most recent activity first, with filters by agent, status or tag. ' +
      'Answers { threads, nextCursor }. Example: {"limit": 20}.',
  },
  create_thread: {
    title: 'Start a thread',
    description:
      'Start a new thread (a conversation or chat) with an agent, the account’s default agent when none is named; ' +
      'a first message starts the agent’s run. Answers the thread with its id. Example: {"message": "Summarise my notes"}.',
  },
  get_thread: {
    title: 'Get a thread',
    description:
      'One thread (conversation) by id: its status (idle or running), its current run and usage totals. ' +
      'To read what was said, use threads_messages_list. Example: {"id": "thr_…"}.',
  },
  send_message: {
    title: 'Send a message',
    description:
      'Send a message to the agent in an existing thread (reply in a conversation): it starts a run when the thread is idle, ' +
      'or reaches the running one. Then wait with threads_wait. Example: {"id": "thr_…", "content": "And in French?"}.',
  },
  threads_messages_list: {
    title: 'Read thread messages',
    description:
      "A thread's messages (the conversation so far: yours, the agent's replies and tool calls), oldest first. " +
      'Example: {"id": "thr_…", "limit": 50}.',
  },
  threads_wait: {
    title: 'Wait for a reply',
    description:
      "Wait until a thread's run ends (the agent has answered) or a time limit passes, and answer the thread's state and last reply. " +
      'Example: {"id": "thr_…", "timeoutMs": 30000}.',
  },
  list_drive: {
    title: 'List files',
    description:
      'List the files and folders in a drive folder (the root without parentId), folders first, then by name. ' +
      'Answers { items, nextCursor } with each item’s id, name, kind and size. Example: {"parentId": "fld_…"}.',
  },
  read_drive_file: {
    title: 'Read a file',
    description:
      'Read a drive file\'s content by id: text as is, binary as base64; up to 4 MiB a call (a larger one by range, "bytes=0-1048575"). ' +
      'Example: {"id": "file_…"}.',
  },
  write_drive_file: {
    title: 'Write a file',
    description:
      'Save (upload) a file to the drive under a name, in the root or a folder (parentId): content is text, or base64 with encoding "base64". ' +
      'A taken name is refused unless ifMatch names its current ETag (then it is replaced). ' +
      'Example: {"name": "notes.md", "content": "# Notes"}.',
  },
  drive_find: {
    title: 'Find files',
    description:
      'Find drive files and folders by name (a glob such as *.csv, or part of the name), anywhere under a folder or the whole drive. ' +
      'To search inside files, use drive_grep. Example: {"name": "*.csv"}.',
  },
  drive_create_folder: {
    title: 'Create a folder',
    description: 'Create a folder (directory) in the drive, in the root or under parentId. Example: {"name": "reports"}.',
  },
  drive_delete: {
    title: 'Delete a file or folder',
    description: 'Delete (remove) a drive file, or a folder with everything in it; ifMatch deletes only that version. Example: {"id": "file_…"}.',
  },
  run_code: {
    title: 'Run JavaScript',
    description:
      'Run a JavaScript script in a sandbox (QuickJS: no network, no files) and answer the value of its last expression as JSON, ' +
      'its console output, and an error with its line when it fails. Use it to compute, parse or transform data, ' +
      'or to do the work of many tool calls in one: the script may call these tools as you, `await svc.call("list_drive", {})` ' +
      "or `await svc.tools.list_drive({})` (search_tools gives each tool's `signature`); a failed call throws a ToolError with `code`. " +
      'Use `return` for the result of a script that awaits. ' +
      'Example: {"code": "const r = await svc.tools.list_drive({}); return r.items.map(f => f.name)"}.',
  },
  create_site: {
    title: 'Create a website',
    description:
      'Create a hosted website: its slug names its public URL, /sites/<slug>/. It serves nothing until deploy_site publishes files. ' +
      'Example: {"slug": "my-portfolio", "title": "Portfolio"}.',
  },
  deploy_site: {
    title: 'Publish a website',
    description:
      'Publish (deploy) files to a site so they go live at once: from a drive folder (folderId or folderPath), files sent inline ' +
      '(files: path and content), or a zip or tar archive. index.html answers a folder. ' +
      'Example: {"id": "site_…", "files": [{"path": "index.html", "content": "<h1>Hi</h1>"}]}.',
  },
  trade_venues: {
    title: 'Trading venues',
    description: 'The venues (exchanges and brokers, and the paper venue for practice) you can trade on, with what each offers. Example: {}.',
  },
  trade_order: {
    title: 'Place an order',
    description:
      'Buy or sell at a venue: a market or limit order for a symbol and quantity (shares, coins). Answers the order and its fills. ' +
      'Example: {"venue": "paper", "symbol": "AAPL", "side": "buy", "type": "market", "qty": 10}.',
  },
  trade_account: {
    title: 'Trading account',
    description: 'Your trading account at a venue: cash, equity, buying power, positions held and open orders. Example: {"venue": "paper"}.',
  },
  trade_cancel: {
    title: 'Cancel orders',
    description:
      'Cancel an open order by id, or all open orders (optionally for one symbol) at a venue. Example: {"venue": "paper", "orderId": "ord_…"}.',
  },
  trading_quote: {
    title: 'Get a quote',
    description: 'A symbol\'s latest price: bid, ask and last trade at a venue. Example: {"venue": "paper", "symbol": "TSLA"}.',
  },
  list_hosts: {
    title: 'List hosts',
    description:
      'Your hosts: machines (a laptop, a server) paired to the account with svc-host, with whether each is connected now. ' +
      'Example: {"id": "acct_…"}.',
  },
  host_call: {
    title: 'Call a tool on a host',
    description:
      "Run a tool on one of your hosts (a paired machine): the host's own MCP tools, by name with arguments. " +
      'Example: {"hostId": "host_…", "tool": "read_file", "arguments": {"path": "notes.txt"}}.',
  },
};
