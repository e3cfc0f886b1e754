// A Node.js bolt speaking Storm's multilang protocol directly (as storm.js documents it):
// the handshake with its pid file, heartbeats answered with sync, and for each sentence
// one emit per word anchored to it, then an ack. A sentence starting with "fail" is
// failed; "die" exits. Emits leave out need_task_ids, so the task ids come back.
'use strict';
const fs = require('fs');

let buffer = '';
let setupDone = false;
let idsOwed = 0;

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + '\nend\n');
}

function handle(msg) {
  if (!setupDone) {
    setupDone = true;
    fs.closeSync(fs.openSync(msg.pidDir + '/' + process.pid, 'w'));
    send({pid: process.pid});
    return;
  }
  if (Array.isArray(msg)) { // task ids of an earlier emit, in order
    idsOwed -= 1;
    if (idsOwed < 0) throw new Error('task ids that no emit asked for');
    return;
  }
  if (msg.task === -1 && msg.stream === '__heartbeat') {
    send({command: 'sync'});
    return;
  }
  const words = String(msg.tuple[0]).split(' ').filter((w) => w.length > 0);
  if (words[0] === 'fail') {
    send({command: 'fail', id: msg.id});
    return;
  }
  if (words[0] === 'die') {
    process.stderr.write('splitsentence.js: dying on purpose\n');
    process.exit(4);
  }
  for (const word of words) {
    idsOwed += 1;
    send({command: 'emit', anchors: [msg.id], tuple: [word]});
  }
  send({command: 'log', msg: 'split ' + words.length + ' words', level: 1});
  send({command: 'ack', id: msg.id});
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
