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
  test('an access key needs its secret, and unsent files outlive their upload URL', () => {
    assert.deepEqual(configProblems({ FILES_S3_BUCKET: 'pin-files' }), []);
    assert.match(configProblems({ FILES_S3_ACCESS_KEY_ID: 'k' }).join('\n'), /FILES_S3_ACCESS_KEY_ID: set with FILES_S3_SECRET_ACCESS_KEY/);
    assert.match(configProblems({ FILES_UPLOAD_URL_TTL: '2h', FILES_UNSENT_EXPIRY: '1h' }).join('\n'), /FILES_UNSENT_EXPIRY: must be at least FILES_UPLOAD_URL_TTL \(2h\)/);
    assert.match(configProblems({ FILES_S3_BUCKET: 'Not_A_Bucket' }).join('\n'), /FILES_S3_BUCKET/);
    assert.match(configProblems({ FILES_MAX_BYTES: String(3 * 1024 ** 3) }).join('\n'), /FILES_MAX_BYTES/);
    const secret = configProblems({ FILES_S3_SECRET_ACCESS_KEY: 'has space' }).join('\n');
    assert.match(secret, /FILES_S3_SECRET_ACCESS_KEY/);
    assert.doesNotMatch(secret, /has space/, 'a secret is never echoed');
  });
});
