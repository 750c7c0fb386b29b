/**
 * The code the sandbox evaluates in each fresh interpreter before the caller's script. It takes the
 * one host function (`sink(level, text)`, which counts and keeps console output) as an argument, so
 * that no global names it, defines `console`, and returns the helpers the host calls afterwards:
 * `serialize(value)` (the result as JSON text), `describe(error)` (an error's name, message,
 * stack and position as primitives), `moduleResult(namespace)` and `setBudget(bytes)` (no text
 * longer than the run's output limit leaves the sandbox, so the host never copies more). It captures the built-ins it uses before the script runs, so a
 * script that replaces them changes only its own output.
 *
 * Code mode (docs/run-code.md, "Calling tools"): its second argument, `toolHost(name, argsJson,
 * resolve, reject)`, hands a tool call to the host (tool-calls.ts), which later calls `resolve` with
 * the result's JSON text or `reject` with the error body's. `enableTools(names)` (a run with tools)
 * defines the global `svc`: `svc.call(name, args)` and a helper per tool, `svc.tools.<name>(args)`,
 * each a promise of the tool's result that rejects with a `ToolError` (`code`, `message`, `details`).
 */
export const PRELUDE = String.raw`(function (sink, toolHost) {
  'use strict';
  var O = Object, str = String, stringify = JSON.stringify, isArray = Array.isArray;
  var call = Function.prototype.call;
  var bind = function (f) { return call.bind(f); };
  var indexOf = bind(Array.prototype.indexOf), push = bind(Array.prototype.push), join = bind(Array.prototype.join), pop = bind(Array.prototype.pop);
  var keys = O.keys, is = O.is, getProto = O.getPrototypeOf;
  var symToString = bind(Symbol.prototype.toString), dateIso = bind(Date.prototype.toISOString), reToString = bind(RegExp.prototype.toString);
  var strSlice = bind(String.prototype.slice);
  var budget = 0;
  var mapForEach = bind(Map.prototype.forEach), setForEach = bind(Set.prototype.forEach);
  var mapSize = O.getOwnPropertyDescriptor(Map.prototype, 'size').get, setSize = O.getOwnPropertyDescriptor(Set.prototype, 'size').get;
  var ErrorP = Error.prototype, DateP = Date.prototype, RegExpP = RegExp.prototype, MapP = Map.prototype, SetP = Set.prototype;
  var ident = /^[A-Za-z_$][\w$]*$/;
  var MAX_DEPTH = 3, MAX_ITEMS = 50;

  function protoChainHas(v, p) {
    for (var o = getProto(v), n = 0; o !== null && n < 64; o = getProto(o), n++) if (o === p) return true;
    return false;
  }
  function errorText(e) {
    var head = str(e.name) + ': ' + str(e.message);
    return typeof e.stack === 'string' && e.stack ? head + '\n' + e.stack.replace(/\n$/, '') : head;
  }
  function fmt(v, depth, seen, top) {
    switch (typeof v) {
      case 'string': return top ? v : stringify(v);
      case 'number': return is(v, -0) ? '-0' : str(v);
      case 'bigint': return str(v) + 'n';
      case 'boolean': case 'undefined': return str(v);
      case 'symbol': return symToString(v);
      case 'function': return '[Function: ' + (typeof v.name === 'string' && v.name ? v.name : '(anonymous)') + ']';
    }
    if (v === null) return 'null';
    if (indexOf(seen, v) !== -1) return '[Circular]';
    if (protoChainHas(v, ErrorP)) return errorText(v);
    if (protoChainHas(v, DateP)) { try { return dateIso(v); } catch (e) { return 'Invalid Date'; } }
    if (protoChainHas(v, RegExpP)) return reToString(v);
    if (depth >= MAX_DEPTH) return isArray(v) ? '[Array]' : '[Object]';
    push(seen, v);
    var parts = [], n = 0, out;
    if (protoChainHas(v, MapP)) {
      mapForEach(v, function (val, k) { if (n++ < MAX_ITEMS) push(parts, fmt(k, depth + 1, seen) + ' => ' + fmt(val, depth + 1, seen)); });
      if (n > MAX_ITEMS) push(parts, '... ' + (n - MAX_ITEMS) + ' more');
      out = 'Map(' + call.call(mapSize, v) + ') {' + (parts.length ? ' ' + join(parts, ', ') + ' ' : '') + '}';
    } else if (protoChainHas(v, SetP)) {
      setForEach(v, function (val) { if (n++ < MAX_ITEMS) push(parts, fmt(val, depth + 1, seen)); });
      if (n > MAX_ITEMS) push(parts, '... ' + (n - MAX_ITEMS) + ' more');
      out = 'Set(' + call.call(setSize, v) + ') {' + (parts.length ? ' ' + join(parts, ', ') + ' ' : '') + '}';
    } else if (isArray(v)) {
      var len = v.length;
      for (var i = 0; i < len && i < MAX_ITEMS; i++) push(parts, fmt(v[i], depth + 1, seen));
      if (len > MAX_ITEMS) push(parts, '... ' + (len - MAX_ITEMS) + ' more items');
      out = '[' + join(parts, ', ') + ']';
    } else {
      var ks = keys(v);
      for (var j = 0; j < ks.length && j < MAX_ITEMS; j++) {
        var k = ks[j];
        push(parts, (ident.test(k) ? k : stringify(k)) + ': ' + fmt(v[k], depth + 1, seen));
      }
      if (ks.length > MAX_ITEMS) push(parts, '... ' + (ks.length - MAX_ITEMS) + ' more');
      out = parts.length ? '{ ' + join(parts, ', ') + ' }' : '{}';
    }
    pop(seen);
    return out;
  }
  function emitter(level) {
    return function () {
      var parts = [];
      for (var i = 0; i < arguments.length; i++) {
        var text;
        try { text = fmt(arguments[i], 0, [], true); } catch (e) { text = '[unprintable]'; }
        push(parts, text);
      }
      var line = join(parts, ' ');
      // The host keeps at most the output budget: what is past it never leaves the sandbox.
      if (line.length > budget) line = strSlice(line, 0, budget);
      sink(level, line);
    };
  }
  var console = {};
  var levels = ['log', 'info', 'warn', 'error', 'debug'];
  for (var l = 0; l < levels.length; l++) console[levels[l]] = emitter(levels[l]);
  O.defineProperty(globalThis, 'console', { value: console, writable: true, configurable: true, enumerable: false });

  function replacer(k, x) { return typeof x === 'bigint' ? str(x) : x; }
  // The JSON text, or its length when it is longer than the output budget.
  function serialize(v) {
    var out = stringify(v, replacer);
    if (out === undefined) return 'null';
    return out.length > budget ? out.length : out;
  }
  function setBudget(n) { budget = n; }

  var parse = JSON.parse, PromiseC = Promise, ErrorC = Error, TypeErrorC = TypeError, freeze = O.freeze, defineProperty = O.defineProperty;
  function toolError(text) {
    var b = null;
    try { b = parse(text).error; } catch (x) { b = null; }
    if (b === null || typeof b !== 'object') b = { code: 'tool_error', message: 'The tool call failed.' };
    var e = new ErrorC(str(b.message));
    e.name = 'ToolError';
    e.code = str(b.code);
    if (b.details !== undefined) e.details = b.details;
    if (typeof b.requestId === 'string') e.requestId = b.requestId;
    return e;
  }
  function callTool(name, args) {
    if (typeof name !== 'string' || name === '') return PromiseC.reject(new TypeErrorC('svc.call: the tool name must be a string.'));
    if (args !== undefined && args !== null && (typeof args !== 'object' || isArray(args))) {
      return PromiseC.reject(new TypeErrorC('svc.call: the arguments must be an object.'));
    }
    var json = args === undefined || args === null ? '{}' : stringify(args, replacer);
    return new PromiseC(function (resolve, reject) {
      toolHost(name, json, function (t) { resolve(parse(t)); }, function (t) { reject(toolError(t)); });
    });
  }
  function helper(name) { return function (args) { return callTool(name, args); }; }
  function enableTools(names) {
    var tools = {};
    for (var i = 0; i < names.length; i++) tools[names[i]] = helper(names[i]);
    var svc = freeze({ call: callTool, tools: freeze(tools) });
    defineProperty(globalThis, 'svc', { value: svc, writable: false, configurable: false, enumerable: false });
  }
  function describe(e) {
    try {
      if (e !== null && typeof e === 'object' && protoChainHas(e, ErrorP)) {
        return [strSlice(str(e.name), 0, 200), strSlice(str(e.message), 0, 4000), typeof e.stack === 'string' ? strSlice(e.stack, 0, 20000) : '',
          typeof e.lineNumber === 'number' ? e.lineNumber : -1, typeof e.columnNumber === 'number' ? e.columnNumber : -1];
      }
      return ['', strSlice('Uncaught ' + fmt(e, 1, []), 0, 4000), '', -1, -1];
    } catch (x) {
      return ['', 'The script threw a value that could not be described.', '', -1, -1];
    }
  }
  function moduleResult(ns) {
    if ('default' in ns) return ns['default'];
    return keys(ns).length ? ns : undefined;
  }
  return [serialize, describe, moduleResult, setBudget, enableTools];
})`;
