// A Node.js bolt over Storm's multilang protocol: [id, sentence] -> [word, id, pos] per word,
// anchored to the sentence, then an ack. Task ids are declined (need_task_ids: false).
'use strict';
const fs = require('fs');

let buffer = '';
let setupDone = false;

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
  if (msg.stream === '__heartbeat') {
    send({command: 'sync'});
    return;
  }
  const id = msg.tuple[0];
  String(msg.tuple[1]).split(' ').forEach((word, pos) => {
    send({command: 'emit', anchors: [msg.id], tuple: [word, id, pos], need_task_ids: false});
  });
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
