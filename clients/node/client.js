#!/usr/bin/env node
'use strict';
/**
 * A small Node.js client for the ARC edge runtime (gRPC service arc.edge.v1.EdgeCache).
 *
 * Library:  const { connect } = require('./client');
 *           const edge = connect('127.0.0.1:50551');
 *           const reply = await edge.invoke('What is ...?', { deadlineMs: 2000 });
 *           edge.close();
 * CLI:      node client.js HOST:PORT "question" [--deadline-ms N]
 *           prints the response as JSON (parameters_json / result_json parsed) and exits 0,
 *           or prints "STATUS_NAME: details" to stderr and exits 2 (1 for usage errors).
 *
 * The .proto file is loaded at run time (no generated code). Every call carries a deadline:
 * the per-call { deadlineMs }, else the connection's default, else 10 s.
 */

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_PATH = path.resolve(__dirname, '..', '..', 'proto', 'arc', 'edge', 'v1', 'edge.proto');
const DEFAULT_DEADLINE_MS = 10000;
// uint64 counters arrive as decimal strings (lossless); enums as their names ("HIT", "MISS", ...).
const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
const CHANNEL_OPTIONS = { 'grpc.max_receive_message_length': 8 << 20 };

let edgePackage = null;

/** The arc.edge.v1 package loaded from the .proto file (once per process). */
function loadPackage() {
  if (edgePackage === null) {
    const definition = protoLoader.loadSync(PROTO_PATH, LOADER_OPTIONS);
    edgePackage = grpc.loadPackageDefinition(definition).arc.edge.v1;
  }
  return edgePackage;
}

function deadlineFrom(deadlineMs, fallbackMs) {
  const ms = deadlineMs === undefined || deadlineMs === null ? fallbackMs : deadlineMs;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
    throw new TypeError(`deadlineMs must be a positive number of milliseconds, got ${ms}`);
  }
  return new Date(Date.now() + ms);
}

function parseJsonField(text, empty) {
  return text ? JSON.parse(text) : empty;
}

/**
 * An InvokeResponse with parameters_json and result_json parsed into objects (empty text -> {}).
 * answer_json is kept as the exact JSON text the runtime sent (parse it when you need the value).
 */
function decodeResponse(response) {
  return {
    ...response,
    parameters_json: parseJsonField(response.parameters_json, {}),
    result_json: parseJsonField(response.result_json, {}),
  };
}

/**
 * Connect to an edge runtime's query listener at "host:port" (default port 50551): plaintext, or TLS
 * when options.rootCert (PEM Buffer of the device's CA) is given, mutual with clientCert/clientKey.
 * options: { deadlineMs (default for every call, 10000), channelOptions, interceptors, rootCert, clientCert, clientKey }.
 * Admin RPCs are served only on the device's admin listener (docs/security.md).
 */
function connect(address, options = {}) {
  const defaultMs = options.deadlineMs === undefined ? DEFAULT_DEADLINE_MS : options.deadlineMs;
  deadlineFrom(defaultMs, DEFAULT_DEADLINE_MS); // validate once, early
  const { EdgeCache } = loadPackage();
  const clientOptions = { ...CHANNEL_OPTIONS, ...(options.channelOptions || {}) };
  if (options.interceptors) clientOptions.interceptors = options.interceptors;
  const credentials = options.rootCert
    ? grpc.credentials.createSsl(options.rootCert, options.clientKey || null, options.clientCert || null)
    : grpc.credentials.createInsecure();
  const target = /:\d+$/.test(address) || address.startsWith('unix:') ? address : `${address}:50551`;
  const stub = new EdgeCache(target, credentials, clientOptions);

  function unary(method, request, callOptions = {}) {
    return new Promise((resolve, reject) => {
      let deadline;
      try {
        deadline = deadlineFrom(callOptions.deadlineMs, defaultMs);
      } catch (err) {
        reject(err);
        return;
      }
      stub[method](request, { deadline }, (err, reply) => (err ? reject(err) : resolve(reply)));
    });
  }

  return {
    address,

    /** Invoke: resolves to the InvokeResponse (outcome "HIT" or "MISS"); rejects with a gRPC ServiceError. */
    invoke(query, { deadlineMs, entryId = '' } = {}) {
      return unary('Invoke', { query, entry_id: entryId }, { deadlineMs });
    },

    /**
     * InvokeStream: resolves to { steps, response } where steps are the NarrationStep
     * messages ({function, text}) in the order streamed. onStep(step) is called as each arrives.
     */
    invokeStream(query, { deadlineMs, entryId = '', onStep } = {}) {
      return new Promise((resolve, reject) => {
        let deadline;
        try {
          deadline = deadlineFrom(deadlineMs, defaultMs);
        } catch (err) {
          reject(err);
          return;
        }
        const steps = [];
        let response = null;
        let settled = false;
        const settle = (fn, value) => {
          if (!settled) {
            settled = true;
            fn(value);
          }
        };
        const call = stub.InvokeStream({ query, entry_id: entryId }, { deadline });
        call.on('data', (event) => {
          if (event.step) {
            steps.push(event.step);
            if (onStep) onStep(event.step);
          } else if (event.response) {
            response = event.response;
          }
        });
        // grpc-js emits 'error' (non-OK status) before 'end', so 'end' here means status OK.
        call.on('error', (err) => settle(reject, err));
        call.on('end', () => {
          if (response === null) {
            settle(reject, new Error('InvokeStream ended without a response'));
          } else {
            settle(resolve, { steps, response });
          }
        });
      });
    },

    /** ListEntries: resolves to { entries: [{id, description, template}], bundle_name, bundle_version }. */
    listEntries({ deadlineMs } = {}) {
      return unary('ListEntries', {}, { deadlineMs });
    },

    /** DescribeEntry: resolves to the EntryDescription (parameters, module source, ...). */
    describeEntry(entryId, { deadlineMs } = {}) {
      return unary('DescribeEntry', { entry_id: entryId }, { deadlineMs });
    },

    /** GetStats: resolves to Stats; uint64 counters (hits, misses, ...) are decimal strings. */
    stats({ deadlineMs } = {}) {
      return unary('GetStats', {}, { deadlineMs });
    },

    /** Close the channel (lets the process exit). */
    close() {
      stub.close();
    },
  };
}

/** "DEADLINE_EXCEEDED" for a ServiceError's numeric code. */
function statusName(code) {
  return grpc.status[code] || `UNKNOWN_STATUS_${code}`;
}

async function main(argv) {
  const args = [];
  let deadlineMs = DEFAULT_DEADLINE_MS;
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--deadline-ms') {
      deadlineMs = Number(argv[i + 1]);
      i += 1;
    } else if (argv[i].startsWith('--deadline-ms=')) {
      deadlineMs = Number(argv[i].slice('--deadline-ms='.length));
    } else {
      args.push(argv[i]);
    }
  }
  if (args.length !== 2 || !(deadlineMs > 0)) {
    process.stderr.write('usage: node client.js HOST:PORT "question" [--deadline-ms N]\n');
    return 1;
  }
  const [address, query] = args;
  const edge = connect(address, { deadlineMs });
  try {
    const reply = await edge.invoke(query);
    // The CLI prints values, not JSON text: answer_json decoded like parameters_json and result_json.
    const decoded = { ...decodeResponse(reply), answer_json: parseJsonField(reply.answer_json, null) };
    process.stdout.write(`${JSON.stringify(decoded, null, 2)}\n`);
    return 0;
  } catch (err) {
    if (typeof err.code === 'number') {
      process.stderr.write(`${statusName(err.code)}: ${err.details}\n`);
      return 2;
    }
    process.stderr.write(`${err.stack || err}\n`);
    return 1;
  } finally {
    edge.close();
  }
}

module.exports = { connect, decodeResponse, statusName, loadPackage, PROTO_PATH, DEFAULT_DEADLINE_MS, LOADER_OPTIONS };

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
