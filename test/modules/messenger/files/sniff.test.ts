import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { configProblems } from '../../../support/config.ts';
import { typeMismatch } from '../../../../src/modules/messenger/files/sniff.ts';
import { PDF, PNG } from './support.ts';

/** A stored ZIP entry's local header (a.txt, empty): the first bytes of any ZIP, .docx included. */
const ZIP = Buffer.concat([Buffer.from('504b0304140000000000000000000000000000000000050000', 'hex'), Buffer.from('a.txt')]);

describe('type sniffing at confirmation', () => {
  test('the bytes must be of the declared type or of its family; unrecognisable bytes only as a type safe for any bytes', async () => {
    assert.equal(await typeMismatch('image/png', PNG), undefined);
    assert.equal(await typeMismatch('application/pdf', PDF), undefined);
    assert.match((await typeMismatch('image/png', PDF))!, /application\/pdf, not the declared image\/png/);
    assert.match((await typeMismatch('application/pdf', PNG))!, /image\/png/);
    // A .docx is a ZIP, and a ZIP may be declared as one.
    assert.equal(await typeMismatch('application/vnd.openxmlformats-officedocument.wordprocessingml.document', ZIP), undefined);
    assert.equal(await typeMismatch('application/zip', ZIP), undefined);
    // application/octet-stream promises nothing; text has no signature.
    assert.equal(await typeMismatch('application/octet-stream', PDF), undefined);
    assert.equal(await typeMismatch('text/plain', Buffer.from('2 rooms\n')), undefined);
    assert.equal(await typeMismatch('text/csv', new Uint8Array()), undefined);
    assert.match((await typeMismatch('text/plain', PNG))!, /image\/png/);
    assert.match((await typeMismatch('image/jpeg', Buffer.from('<script>alert(1)</script>')))!, /not image\/jpeg/);
  });
});

describe('files settings', () => {
  test('unsent files outlive their upload URL, and the store\'s credentials are the AWS SDK\'s own variables', () => {
    assert.deepEqual(configProblems({ FILES_S3_BUCKET: 'pin-files' }), []);
    assert.match(configProblems({ FILES_UNSENT_EXPIRY: '10m' }).join('\n'), /FILES_UNSENT_EXPIRY: must be at least a presigned upload URL's lifetime \(15m\)/);
    assert.deepEqual(configProblems({ FILES_UNSENT_EXPIRY: '15m' }), []);
    assert.match(configProblems({ FILES_S3_BUCKET: 'Not_A_Bucket' }).join('\n'), /FILES_S3_BUCKET/);
    assert.match(configProblems({ FILES_MAX_BYTES: String(3 * 1024 ** 3) }).join('\n'), /FILES_MAX_BYTES/);
    const secret = configProblems({ FILES_S3_SECRET_ACCESS_KEY: 'has space' }).join('\n');
    assert.match(secret, /FILES_S3_SECRET_ACCESS_KEY: removed — set AWS_SECRET_ACCESS_KEY instead/);
    assert.doesNotMatch(secret, /has space/, 'a secret is never echoed');
  });
});
