// A Node.js bolt speaking Storm's multilang protocol directly (as storm.js documents it):
// the handshake with its pid file, heartbeats answered with sync, and for each sentence
// one emit per word anchored to it. Emits leave out need_task_ids, so the task ids of
// each emit come back, in order; a sentence is acked once the ids of all its emits came
// back and each names a task of a component this bolt feeds (else it is failed). A
// sentence starting with "fail" is failed; "die" exits.
'use strict';
const fs = require('fs');

let buffer = '';
let context = null;
const waiting = []; // per emit, in order: the sentence it belongs to
const owed = new Map(); // sentence id -> {left, ok}

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + '\nend\n');
}

function targetsOk(ids) {
  const targets = Object.keys(context['stream->target->grouping']['default'] || {});
  return ids.length > 0 && ids.every((t) => targets.includes(context['task->component'][String(t)]));
}

function taskIds(ids) {
  const sentence = waiting.shift();
  if (sentence === undefined) throw new Error('task ids that no emit asked for');
  const state = owed.get(sentence);
  state.left -= 1;
  state.ok = state.ok && targetsOk(ids);
  if (state.left === 0) {
    owed.delete(sentence);
    send({command: state.ok ? 'ack' : 'fail', id: sentence});
  }
}

function handle(msg) {
  if (context === null) {
    context = msg.context;
    fs.closeSync(fs.openSync(msg.pidDir + '/' + process.pid, 'w'));
    send({pid: process.pid});
    return;
  }
  if (Array.isArray(msg)) {
    taskIds(msg);
    return;
  }
  if (msg.task === -1 && msg.stream === '__heartbeat') {
    send({command: 'sync'});
    return;
  }
  const words = String(msg.tuple[0]).split(' ').filter((w) => w.length > 0);
  if (words[0] === 'fail' || words.length === 0) {
    send({command: 'fail', id: msg.id});
    return;
  }
  if (words[0] === 'die') {
    process.stderr.write('splitsentence.js: dying on purpose\n');
    process.exit(4);
  }
  owed.set(msg.id, {left: words.length, ok: true});
  for (const word of words) {
    waiting.push(msg.id);
    send({command: 'emit', anchors: [msg.id], tuple: [word]});
  }
  send({command: 'log', msg: 'split ' + words.length + ' words', level: 1});
}

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf('\nend\n')) >= 0) {
    const text = buffer.slice(0, end);
    buffer = buffer.slice(end + 5);
    if (text.trim().length > 0) handle(JSON.parse(text));
  }
});
process.stdin.on('end', () => process.exit(0));
