'use strict';
// Shared plumbing for the ali-ons drivers: argument parsing, JSON-lines output,
// a quiet logger (client chatter goes to stderr, never to stdout) and error events.
//
// Conventions (shared with the cpp_* drivers):
//   stdout: one JSON object per line, each with an "event" field; the last line is
//           {"event":"summary",...} unless the process was killed.
//   exit 0: the goal was reached (all sent / --expect messages consumed / timeout without --expect)
//   exit 1: the goal was not reached (send failures, timeout before --expect)
//   exit 2: bad command line: one {"event":"usage_error"} line on stdout, one line on stderr

const { parseArgs } = require('node:util');
const path = require('node:path');

function emit(event, fields) {
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields || {})) + '\n');
}

class UsageError extends Error {}

function usageFail(script, message) {
  emit('usage_error', { error: message });
  process.stderr.write(`${path.basename(script)}: usage error: ${message.replace(/\s+/g, ' ')}\n`);
  process.exit(2);
}

function toInt(name, raw, min) {
  if (raw === undefined) return undefined;
  if (!/^-?\d+$/.test(raw)) throw new UsageError(`--${name} must be an integer, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value < min) throw new UsageError(`--${name} must be >= ${min}, got ${value}`);
  return value;
}

function toSeconds(name, raw) {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !(value > 0)) {
    throw new UsageError(`--${name} must be a positive number of seconds, got ${JSON.stringify(raw)}`);
  }
  return value;
}

// Parses argv against {name: 'string'} options plus the positionals <namesrv> <topic>.
function parseCommandLine(script, optionNames, argv) {
  const options = {};
  for (const name of optionNames) options[name] = { type: 'string' };
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    if (positionals.length !== 2) {
      throw new UsageError(`expected 2 positional arguments <namesrv> <topic>, got ${positionals.length}`);
    }
    const [namesrv, topic] = positionals;
    if (!/^[^:\s]+:\d+$/.test(namesrv)) throw new UsageError(`namesrv must be host:port, got ${JSON.stringify(namesrv)}`);
    if (!topic) throw new UsageError('topic must not be empty');
    return { namesrv, topic, values };
  } catch (err) {
    usageFail(script, err instanceof UsageError ? err.message : String(err.message || err));
    return null; // unreachable
  }
}

function check(script, fn) {
  try {
    return fn();
  } catch (err) {
    if (err instanceof UsageError) usageFail(script, err.message);
    throw err;
  }
}

function errorFields(err) {
  if (!(err instanceof Error)) return { error: String(err), name: 'Error' };
  const fields = { error: err.message, name: err.name };
  if (err.code !== undefined) fields.code = err.code;
  return fields;
}

// ali-ons logs through options.logger; keep stdout clean and only show warnings/errors
// (or everything with RMQ_PEER_VERBOSE=1) on stderr.
function makeLogger() {
  const verbose = process.env.RMQ_PEER_VERBOSE === '1';
  const { format } = require('node:util');
  const write = (level, args) => process.stderr.write(`[ali-ons ${level}] ${format(...args)}\n`);
  return {
    info: (...args) => { if (verbose) write('info', args); },
    debug: (...args) => { if (verbose) write('debug', args); },
    warn: (...args) => write('warn', args),
    error: (...args) => write('error', args),
  };
}

function loadAliOns() {
  try {
    return require('ali-ons');
  } catch (err) {
    emit('error', { name: 'DriverSetupError', error: `cannot load ali-ons (set NODE_PATH to its node_modules): ${err.message}` });
    process.stderr.write(`cannot load ali-ons: ${err.message}\n`);
    process.exit(3);
    return null;
  }
}

function sleep(ms) {
  return new Promise(resolve => setTimeout(resolve, ms));
}

module.exports = { emit, UsageError, parseCommandLine, check, toInt, toSeconds, errorFields, makeLogger, loadAliOns, sleep };
