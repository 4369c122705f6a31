"""The schemas themselves: complete, consistent with docs/protocol.md, and strict
(known-bad documents are refused, known-good ones accepted)."""
import os
import re

import proto
from proto import OPS, SCHEMA_DIR, schemas

H = 'a' * 64
FRAME = {'frame': 0, 'function': '/', 'args': ['1', '0'], 'locals': []}
PAUSE = {'generation': 14, 'pause': 1, 'level': 1, 'condition_type': 'DIVISION-BY-ZERO', 'report': 'r', 'backtrace': '0: (/ 1 0)\n',
         'frames': [FRAME],
         'restarts': [{'id': 'p1-0', 'level': 1, 'name': 'USE-VALUE', 'report': 'USE-VALUE'}], 'steps_used': 0, 'step_budget': 20}

# (schema, document, should it match?)
EXAMPLES = [
    ('request-call.json', {'op': 'call', 'source': '(+ 1 2)'}, True),
    ('request-call.json', {'op': 'call', 'source': '(+ 1 2)', 'generation': 3, 'id': 'x'}, True),
    ('request-call.json', {'op': 'call'}, False),
    ('request-call.json', {'op': 'call', 'source': '1', 'sudo': True}, False),
    ('request-call.json', {'op': 'call', 'source': '1', 'generation': -1}, False),
    ('request-call.json', {'op': 'call', 'source': '1', 'generation': '3'}, False),
    ('request-call.json', {'op': 'call', 'source': 'a\u0000b'}, False),
    ('request-call.json', {'op': 'call', 'source': '1', 'id': 1.5}, False),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'abort'}}, True),
    ('request-act.json', {'op': 'act', 'action': {'type': 'abort'}}, False),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'resume'}}, False),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'resume', 'restart_id': 'p1-0',
                                                                    'arguments': '(list 1)'}}, True),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'abort', 'source': '1'}}, False),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'rm'}}, False),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'evaluate', 'source': 'd', 'frame': 1}}, True),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'return-from-frame', 'frame': 0,
                                                                    'arguments': '(list 1)'}}, True),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'return-from-frame'}}, False),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'restart-frame', 'frame': 0}}, True),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'restart-frame', 'frame': 40}}, False),
    ('request-act.json', {'op': 'act', 'generation': 1, 'action': {'type': 'restart-frame', 'frame': 0,
                                                                    'arguments': '(list 1)'}}, False),
    ('request-history.json', {'op': 'history', 'limit': 1001}, False),
    ('request-observe.json', {'op': 'observe', 'budget': 0}, False),
    ('request-inspect.json', {'op': 'inspect', 'kind': 'data', 'name': ':A'}, True),
    ('request-inspect.json', {'op': 'inspect', 'kind': 'socket', 'name': ':A'}, False),
    ('request-invariant-add.json', {'op': 'invariant-add', 'name': '', 'source': 't'}, False),
    ('request.json', {'op': 'format-disk'}, False),
    ('request.json', {'op': 'hello', 'protocol': 1, 'client': 'me'}, True),
    ('reply-hello.json', {'ok': True, 'protocol': 1, 'kernel': '0.1.0', 'store': '/s', 'pid': 7, 'id': 7}, True),
    ('reply-hello.json', {'ok': True, 'protocol': 1, 'kernel': '0.1.0', 'store': '/s', 'pid': 7, 'extra': 1}, False),
    ('reply-hello.json', {'ok': False, 'code': 'unsupported-protocol', 'message': 'm'}, True),
    ('reply-hello.json', {'ok': False, 'code': 'not-found', 'message': 'm'}, False),
    ('reply-call.json', {'ok': True, 'outcome': 'accepted', 'revision': 5, 'generation': 12, 'value': '7', 'output': '',
                         'changes': [{'kind': 'data', 'name': ':A', 'removed': False}]}, True),
    ('reply-call.json', {'ok': True, 'outcome': 'accepted', 'generation': 12, 'changes': []}, False),
    ('reply-call.json', {'ok': False, 'code': 'error', 'outcome': 'error', 'message': 'm', 'generation': 13}, True),
    ('reply-call.json', {'ok': False, 'code': 'error', 'outcome': 'limit', 'message': 'm', 'generation': 13}, False),
    ('reply-call.json', {'ok': False, 'code': 'not-found', 'message': 'm'}, False),
    ('reply-call.json', {'ok': True, 'status': 'paused', 'generation': 14, 'pause': PAUSE}, True),
    ('reply-call.json', {'ok': False, 'code': 'error', 'outcome': 'error', 'message': 'm', 'generation': 13,
                         'diagnosis': {'condition_type': 'E', 'report': 'r', 'backtrace': '0: (F)\n',
                                       'restarts': [{'name': 'R', 'report': 'r', 'lambda_list': '()'}]}}, True),
    ('reply-call.json', {'ok': False, 'code': 'error', 'outcome': 'error', 'message': 'm', 'generation': 13,
                         'diagnosis': {'condition_type': 'E', 'report': 'r', 'restarts': []}}, False),
    ('reply-act.json', {'ok': True, 'status': 'paused', 'generation': 14, 'pause': PAUSE}, True),
    ('reply-act.json', {'ok': True, 'status': 'paused', 'generation': 14, 'pause': dict(PAUSE, extra=1)}, False),
    ('reply-act.json', {'ok': True, 'status': 'paused', 'generation': 14, 'pause': dict(PAUSE, frames=[
        dict(FRAME, locals=[{'name': 'N', 'value': '1'}])])}, True),
    ('reply-act.json', {'ok': True, 'status': 'paused', 'generation': 14, 'pause': dict(PAUSE, frames=[
        dict(FRAME, locals=[{'name': 'N'}])])}, False),
    ('reply-act.json', {'ok': True, 'status': 'paused', 'generation': 14, 'pause': dict(PAUSE, frames=[
        dict(FRAME, function='F' * 121)])}, False),
    ('reply-act.json', {'ok': False, 'code': 'invalid-arguments', 'message': 'm', 'status': 'paused', 'generation': 14,
                        'pause': dict(PAUSE, refusal='invalid-arguments', error='m')}, True),
    ('reply-act.json', {'ok': False, 'code': 'error', 'outcome': 'error', 'message': 'm', 'generation': 1}, False),
    ('reply-act.json', {'ok': False, 'code': 'limit', 'message': 'm', 'status': 'paused', 'generation': 14,
                        'pause': PAUSE}, False),
    ('reply-error.json', {'ok': False, 'code': 'no-such-code', 'message': 'm'}, False),
    ('reply-error.json', {'ok': False, 'code': 'busy'}, False),
    ('reply-error.json', {'ok': True, 'code': 'busy', 'message': 'm'}, False),
    ('reply-status.json', {'ok': True, 'kernel': 'k', 'protocol': 1, 'store': 's', 'pid': 1, 'worker_pid': 2,
                           'revision': 1, 'generation': 1, 'state': 'sleeping', 'queue': 0, 'attempts': 0,
                           'current_attempt': 0, 'worker_restarts': 0, 'clients': 1, 'uptime': 1.5,
                           'stopping': False}, False),
    ('reply-inspect.json', {'ok': True, 'entry': {'kind': 'data', 'name': ':A', 'hash': H, 'text': 't'}}, True),
    ('reply-inspect.json', {'ok': True, 'entry': {'kind': 'data', 'name': ':A', 'hash': 'XYZ', 'text': 't'}}, False),
    ('reply.json', {'ok': True, 'subscribed': True}, True),
    ('reply.json', {'ok': True, 'whatever': True}, False),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'paused', 'attempt': 3, 'condition': 'C', 'generation': 4}, True),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'paused', 'attempt': 3, 'condition': 'C', 'generation': 4,
                    'ok': True}, False),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'rejected', 'attempt': 3, 'command': 'call', 'outcome': 'limit',
                    'message': 'm'}, False),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'rejected', 'attempt': 3, 'command': 'call', 'outcome': 'unsafe',
                    'message': 'm'}, True),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'rejected', 'attempt': 3, 'outcome': 'unsafe'}, False),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'dropped', 'command': 'call', 'source': '(f)'}, True),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'accepted', 'attempt': 3, 'command': 'rollback',
                    'outcome': 'accepted', 'revision': 4, 'generation': 5, 'target': 2}, True),
    ('request-apply.json', {'op': 'apply', 'source': '(defun f () 1) (f)', 'summary': 's',
                            'limits': {'fuel': 0}}, True),
    ('request-apply.json', {'op': 'apply', 'source': '1', 'limits': {'fuel': -1}}, False),
    ('request-rollback.json', {'op': 'rollback', 'revision': 2}, True),
    ('request-rollback.json', {'op': 'rollback', 'revision': 0}, False),
    ('request-call.json', {'op': 'call', 'source': '1', 'wait': True, 'program': True,
                           'limits': {'fuel': 10, 'heap': 1000}}, True),
    ('request-call.json', {'op': 'call', 'source': '1', 'limits': {'stack': 1}}, False),
    ('request-inspect.json', {'op': 'inspect', 'name': 'F'}, True),
    ('reply-call.json', {'ok': True, 'outcome': 'accepted', 'revision': 5, 'generation': 12, 'value': '1',
                         'values': ['1', 'T'], 'changes': [{'kind': 'data', 'name': ':A', 'removed': False,
                                                           'added': True}]}, True),
    ('reply-call.json', {'ok': False, 'code': 'paused', 'message': 'm', 'status': 'paused', 'generation': 3,
                         'pause': {'generation': 3, 'pause': 1, 'level': 1, 'condition_type': 'E', 'report': 'r',
                                   'backtrace': '', 'frames': [], 'restarts': [], 'steps_used': 0,
                                   'step_budget': 20}}, True),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'accepted', 'attempt': 3, 'command': 'call', 'outcome': 'accepted', 'revision': 4,
                    'generation': 5}, True),
    ('event.json', {'seq': 1, 'time': 2, 'event': 'exploded'}, False),
    ('event.json', {'seq': 9, 'time': 2, 'event': 'aborted', 'attempt': 3, 'truncated': True,
                    'original_bytes': 100000, 'head': '{"seq":9'}, True),
]


def codes_in_protocol_md():
    text = open(os.path.join(SCHEMA_DIR, '..', 'protocol.md'), encoding='utf-8').read()
    section = text.split('### Error codes', 1)[1].split('\n### ', 1)[0]
    return set(re.findall(r'^\| `([a-z0-9-]+)` \|', section, re.M))


def reasons_in_protocol_md():
    text = open(os.path.join(SCHEMA_DIR, '..', 'protocol.md'), encoding='utf-8').read()
    para = text.split('`code`/`outcome` of a failed transaction', 1)[1].split('Program output', 1)[0]
    # "... and `interrupted` when the worker died": a kernel code, not a txn reason
    return set(re.findall(r'`([a-z-]+)`', para)) - {'interrupted'}


def run(R):
    S = schemas()

    def complete():
        for op in OPS:
            for kind in ('request', 'reply'):
                assert '%s-%s.json' % (kind, op) in S.docs, 'no %s-%s.json' % (kind, op)
        for name in ('reply-error.json', 'event.json', 'request.json', 'reply.json', 'common.json'):
            assert name in S.docs, name
        readme = open(os.path.join(SCHEMA_DIR, 'README.md'), encoding='utf-8').read()
        for name in S.docs:
            assert name in readme, '%s is not in docs/schema/README.md' % name
    R.run('schema/complete-and-indexed', complete)

    def codes_match_docs():
        enum = set(S.docs['common.json']['$defs']['error-code']['enum'])
        reasons = set(S.docs['common.json']['$defs']['reason']['enum'])
        doc_codes = codes_in_protocol_md()
        doc_reasons = reasons_in_protocol_md()
        assert doc_codes and doc_reasons, 'could not read the code tables of docs/protocol.md'
        assert enum == doc_codes | doc_reasons, 'error codes that only one of the schema and docs/protocol.md ' \
            'has: %s' % sorted(enum ^ (doc_codes | doc_reasons))
        assert reasons == doc_reasons, 'schema reasons vs docs: %s' % sorted(reasons ^ doc_reasons)
    R.run('schema/codes-match-protocol-md', codes_match_docs)

    def examples():
        bad = []
        for name, doc, want in EXAMPLES:
            got = S.valid(name, doc)
            if got != want:
                bad.append('%s %s %s' % (name, 'refuses' if want else 'accepts', proto.snippet(doc, 200)))
        assert not bad, 'schemas disagree with known documents:\n  ' + '\n  '.join(bad)
    R.run('schema/known-documents', examples)
