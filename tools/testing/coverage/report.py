#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Line and branch coverage of the project's own kernel sources.

    report.py --tree TREE [--blocks N] [--json FILE] [DATADIR...]

TREE is the build tree of a GCOV_PROFILE=y build (build/<krel>-gcov/tree):
its *.gcno files name the objects.  Each DATADIR holds gcov data files
(*.gcda) as copied out of a guest by collect-gcov.sh: DATADIR/<absolute
path of the object>.gcda.  The counts of every DATADIR are added up (one
per guest, e.g. one per suite).  An object without data counts as never
run.

gcov (the compiler's, in JSON form) is run once per object and data
directory; its per-line counts are then added per source file, so a file
compiled into several objects, or a header, would be merged too.  Only the
sources the project owns are reported:

    drivers/infiniband/core/*.c    (ib_cm.ko and its test modules)
    drivers/infiniband/hw/mlx4/cm.c  (the PV-CM cache in mlx4_ib.ko)

For each: lines hit/instrumented, branches taken/instrumented (a branch
is one outcome of a conditional jump, as gcov -b counts them), functions
entered/defined and the functions never entered.  Functions come from
the source (kernel coding style: the body opens with "{" and closes with
"}" at column 0), so a static function the compiler inlined everywhere
is still listed; a function "entered" has at least one of its lines hit.

The receive path of a file is the set of its functions reachable from
the module's receive entry points over the static reference graph: a
function refers to every function (of the same module's owned sources)
whose name appears in its body, as a call or as a pointer, and through
the file-scope tables it names (core/cm.c's cm_rx_handlers[]).  Entry
points (RECEIVE_ROOTS below): ib_cm's MAD agent receive handler
cm_mad_recv_handler() (the test hook cm_recv_injected(), with which the
rx test feeds the same cm_recv(), is not a root, and the test-hook
sources are not in the graph); mlx4_ib's mlx4_ib_multiplex_cm_handler()
(VF to wire), mlx4_ib_demux_cm_handler() and
mlx4_ib_demux_cm_handler_to_slave() (wire to VF).  Reachable is not the
same as "only on the receive path": code shared with the send side
(building a REJ, entering TimeWait, destroying a cm_id) is counted when
a received MAD can lead to it.

--blocks N prints the N largest runs of consecutive instrumented lines
that no test reached inside receive-path functions.
"""

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

OWNED = (
    (re.compile(r'^drivers/infiniband/core/[^/]+\.c$'), 'ib_cm'),
    (re.compile(r'^drivers/infiniband/hw/mlx4/cm\.c$'), 'mlx4_ib'),
)
TEST_SOURCE = re.compile(r'_test\.c$')
# Built into ib_cm.ko only with CONFIG_INFINIBAND_CM_TEST_HOOKS (TEST=1).
TEST_HOOKS = ('drivers/infiniband/core/cm_fault.c',
              'drivers/infiniband/core/cm_test_hook.c')

RECEIVE_ROOTS = {
    'ib_cm': ('cm_mad_recv_handler',),
    'mlx4_ib': ('mlx4_ib_multiplex_cm_handler', 'mlx4_ib_demux_cm_handler',
                'mlx4_ib_demux_cm_handler_to_slave'),
}

IDENT = re.compile(r'[A-Za-z_]\w*')
# Words that may stand before a declarator's "(" in a function header.
NOT_NAMES = {'__attribute__', '__printf', '__must_hold', '__acquires',
             '__releases', '__cond_acquires', '__aligned', '__section',
             'if', 'while', 'for', 'switch', 'return', 'sizeof', 'typeof',
             '__typeof__', 'defined'}


def owner(rel):
    """The module a source belongs to, or None if the project does not own it."""
    for pat, mod in OWNED:
        if pat.match(rel):
            return mod
    return None


def strip_c(text):
    """text with comments, string and character literals blanked out,
    every newline kept (so that line numbers stay)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def parse_functions(path):
    """Function definitions and file-scope tables of a kernel-style C file.

    Returns (functions, tables): functions maps a name to a pair: the
    [(first line, last line)] of its definitions (several when #ifdef
    branches define it, only one of which has code) and the identifiers of
    their bodies; tables maps the name of a file-scope initialized object
    to the identifiers of its initializer.
    """
    with open(path, encoding='utf-8', errors='replace') as f:
        lines = strip_c(f.read()).split('\n')
    functions, tables = {}, {}
    header = []
    outside = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip() == '{':
            text = ' '.join(header)
            name = None
            for m in re.finditer(r'([A-Za-z_]\w*)\s*\(', text):
                if m.group(1) not in NOT_NAMES:
                    name = m.group(1)
                    break
            start = i + 1 - len(header)
            body = []
            j = i + 1
            while j < len(lines) and not lines[j].startswith('}'):
                body.append(lines[j])
                j += 1
            if name:
                ranges, idents = functions.setdefault(name, ([], set()))
                ranges.append((start, j + 1))
                idents |= set(IDENT.findall(' '.join(body)))
            header = []
            i = j + 1
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith('#') or \
                stripped.endswith((';', '}', '*/')) or line.startswith('}'):
            outside.append(line)
            header = []
        else:
            header.append(line)
            outside.append(line)
        i += 1
    # File-scope initializers: "name[...] ... = {" or "name = ...", up
    # to the ";" that ends the statement.
    for stmt in ' '.join(outside).split(';'):
        if '=' not in stmt:
            continue
        decl, init = stmt.split('=', 1)
        m = re.search(r'([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*\)?\s*(\([^)]*\))?\s*$',
                      decl)
        first = re.search(r'([A-Za-z_]\w*)\s*\[', decl)
        name = first.group(1) if first else (m.group(1) if m else None)
        if name:
            tables[name] = set(IDENT.findall(init))
    return functions, tables


def run_gcov(gcno, gcda):
    """gcov's JSON for one object, its data taken from gcda (or none)."""
    tmp = tempfile.mkdtemp(prefix='pvcm-gcov-')
    try:
        base = os.path.join(tmp, 'obj')
        shutil.copyfile(gcno, base + '.gcno')
        if gcda:
            shutil.copyfile(gcda, base + '.gcda')
        res = subprocess.run(['gcov', '--json-format', '--branch-probabilities',
                              '--stdout', base + '.gcda'], cwd=tmp,
                             capture_output=True, check=False)
        if res.returncode != 0:
            sys.stderr.write(res.stderr.decode(errors='replace'))
            raise SystemExit(f'report.py: gcov failed on {gcno}')
        out = res.stdout
        if out[:2] == b'\x1f\x8b':
            out = gzip.decompress(out)
        docs = []
        for chunk in out.decode().splitlines():
            if chunk.strip():
                docs.append(json.loads(chunk))
        return docs
    finally:
        shutil.rmtree(tmp)


class FileCov:
    """Counts of one source file, added over objects and data sets."""

    def __init__(self):
        self.lines = {}       # line -> count
        self.branches = {}    # (object, line) -> [count per branch]

    def add(self, obj, doc_file):
        for ln in doc_file['lines']:
            no = ln['line_number']
            self.lines[no] = self.lines.get(no, 0) + ln['count']
            if ln['branches']:
                key = (obj, no)
                counts = [b['count'] for b in ln['branches']]
                old = self.branches.get(key)
                if old is None or len(old) != len(counts):
                    self.branches[key] = counts
                else:
                    self.branches[key] = [a + b for a, b in zip(old, counts)]

    def line_figures(self, ranges=None):
        """(hit, instrumented) lines, within ranges [(first, last)] if given."""
        hit = tot = 0
        for no, count in self.lines.items():
            if ranges is not None and not any(a <= no <= b for a, b in ranges):
                continue
            tot += 1
            hit += count > 0
        return hit, tot

    def branch_figures(self, ranges=None):
        hit = tot = 0
        for (_, no), counts in self.branches.items():
            if ranges is not None and not any(a <= no <= b for a, b in ranges):
                continue
            tot += len(counts)
            hit += sum(1 for c in counts if c > 0)
        return hit, tot


def pct(hit, tot):
    return f'{100.0 * hit / tot:5.1f}%' if tot else '    -'


def receive_path(module, files, parsed):
    """{file: set of function names} reachable from the module's roots."""
    where = {}
    for rel in files:
        funcs, _ = parsed[rel]
        for name in funcs:
            where.setdefault(name, []).append(rel)
    tables = {}
    for rel in files:
        for name, idents in parsed[rel][1].items():
            tables[(rel, name)] = idents

    def resolve(rel, name):
        """Definitions name can refer to from rel: its own file first."""
        if name in parsed[rel][0]:
            return [rel]
        return where.get(name, [])

    seen = set()
    todo = []
    for root in RECEIVE_ROOTS[module]:
        for rel in where.get(root, []):
            todo.append((rel, root))
    while todo:
        rel, name = todo.pop()
        if (rel, name) in seen:
            continue
        seen.add((rel, name))
        idents = set(parsed[rel][0][name][1])
        # through file-scope tables the body names
        done_tables = set()
        grow = True
        while grow:
            grow = False
            for ident in list(idents):
                if (rel, ident) in tables and ident not in done_tables:
                    done_tables.add(ident)
                    idents |= tables[(rel, ident)]
                    grow = True
        for ident in idents:
            if ident == name:
                continue
            for r in resolve(rel, ident):
                if (r, ident) not in seen:
                    todo.append((r, ident))
    out = {}
    for rel, name in seen:
        out.setdefault(rel, set()).add(name)
    return out


def uncovered_blocks(cov, funcs, names):
    """Runs of consecutive instrumented, never hit lines in functions names:
    [(length, first, last, function)]."""
    blocks = []
    for name in names:
        run = []
        for no in sorted(n for n in cov.lines
                         if any(a <= n <= b for a, b in funcs[name][0])):
            if cov.lines[no] == 0:
                run.append(no)
            else:
                if run:
                    blocks.append((len(run), run[0], run[-1], name))
                run = []
        if run:
            blocks.append((len(run), run[0], run[-1], name))
    return blocks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    ap.add_argument('--tree', required=True,
                    help='build tree of the GCOV_PROFILE=y build')
    ap.add_argument('--blocks', type=int, default=0,
                    help='list the N largest uncovered receive-path blocks')
    ap.add_argument('--json', help='also write the figures to this file')
    ap.add_argument('datadirs', nargs='*',
                    help='directories of .gcda files (absolute object paths)')
    args = ap.parse_args()
    tree = os.path.abspath(args.tree)

    gcnos = []
    for d, _, names in os.walk(os.path.join(tree, 'drivers', 'infiniband')):
        gcnos += [os.path.join(d, n) for n in names if n.endswith('.gcno')]
    if not gcnos:
        raise SystemExit(f'report.py: no .gcno under {tree}: not a '
                         'GCOV_PROFILE=y build')
    gcnos.sort()

    cov = {}
    data_files = 0
    for gcno in gcnos:
        gcdas = []
        for dd in args.datadirs:
            p = os.path.join(dd, gcno[:-len('.gcno')].lstrip('/') + '.gcda')
            if os.path.exists(p):
                gcdas.append(p)
        data_files += len(gcdas)
        for gcda in gcdas or [None]:
            for doc in run_gcov(gcno, gcda):
                for f in doc['files']:
                    path = f['file']
                    if not os.path.isabs(path):
                        path = os.path.join(os.path.dirname(gcno), path)
                    path = os.path.normpath(path)
                    if not path.startswith(tree + '/'):
                        continue
                    rel = path[len(tree) + 1:]
                    if owner(rel):
                        cov.setdefault(rel, FileCov()).add(gcno, f)
    if args.datadirs and not data_files:
        raise SystemExit('report.py: no .gcda in ' + ' '.join(args.datadirs) +
                         f' for the objects of {tree}')

    rels = sorted(cov, key=lambda r: (owner(r), bool(TEST_SOURCE.search(r)),
                                      r in TEST_HOOKS, r))
    parsed = {r: parse_functions(os.path.join(tree, r)) for r in rels}

    rx = {}
    for module in RECEIVE_ROOTS:
        files = [r for r in rels if owner(r) == module and
                 not TEST_SOURCE.search(r) and r not in TEST_HOOKS]
        rx.update(receive_path(module, files, parsed))

    print(f'Coverage: {len(gcnos)} objects, {data_files} data files '
          f'from {len(args.datadirs)} director{"y" if len(args.datadirs) == 1 else "ies"}')
    print()
    hdr = f'{"file":42} {"lines":>13} {"%":>6}  {"branches":>13} {"%":>6}  {"functions":>9}'
    print(hdr)
    print('-' * len(hdr))
    result = {'files': {}}
    totals = {}
    for rel in rels:
        c = cov[rel]
        funcs = parsed[rel][0]
        lh, lt = c.line_figures()
        bh, bt = c.branch_figures()
        entered = []
        never = []
        nocode = []
        for name, (ranges, _) in sorted(funcs.items(), key=lambda kv: kv[1][0]):
            h, t = c.line_figures(ranges)
            if not t:
                nocode.append(name)
            elif h:
                entered.append(name)
            else:
                never.append(name)
        kind = ' (test)' if TEST_SOURCE.search(rel) else \
            ' (hook)' if rel in TEST_HOOKS else ''
        label = (rel.replace('drivers/infiniband/', '') + kind)
        print(f'{label:42} {lh:>6}/{lt:<6} {pct(lh, lt)}  {bh:>6}/{bt:<6} '
              f'{pct(bh, bt)}  {len(entered):>4}/{len(entered) + len(never):<4}')
        if not kind:
            t = totals.setdefault(owner(rel), [0, 0, 0, 0])
            t[0] += lh
            t[1] += lt
            t[2] += bh
            t[3] += bt
        result['files'][rel] = {
            'lines': [lh, lt], 'branches': [bh, bt],
            'functions_entered': len(entered), 'functions_never': never,
            'functions_without_code': nocode}
    print('-' * len(hdr))
    for mod, (lh, lt, bh, bt) in sorted(totals.items()):
        label = f'{mod}.ko (owned, no tests/hooks)'
        print(f'{label:42} {lh:>6}/{lt:<6} {pct(lh, lt)}  {bh:>6}/{bt:<6} {pct(bh, bt)}')
    result['totals'] = totals

    print()
    print('Receive path (functions reachable from ' +
          '; '.join(f'{m}: {", ".join(r)}' for m, r in RECEIVE_ROOTS.items()) +
          '; see report.py):')
    print(f'{"file":42} {"lines":>13} {"%":>6}  {"branches":>13} {"%":>6}  {"functions":>9}')
    for rel in rels:
        if rel not in rx:
            continue
        c = cov[rel]
        funcs = parsed[rel][0]
        ranges = [r for n in rx[rel] for r in funcs[n][0]]
        lh, lt = c.line_figures(ranges)
        bh, bt = c.branch_figures(ranges)
        ent = sum(1 for n in rx[rel] if c.line_figures(funcs[n][0])[0])
        label = rel.replace('drivers/infiniband/', '')
        print(f'{label:42} {lh:>6}/{lt:<6} {pct(lh, lt)}  {bh:>6}/{bt:<6} '
              f'{pct(bh, bt)}  {ent:>4}/{len(rx[rel]):<4}')
        result['files'][rel]['receive_path'] = {
            'lines': [lh, lt], 'branches': [bh, bt],
            'functions': sorted(rx[rel])}

    print()
    print('Functions never entered:')
    for rel in rels:
        never = result['files'][rel]['functions_never']
        if TEST_SOURCE.search(rel):
            print(f'  {rel}: {len(never)} (test module, not listed)')
            continue
        rxn = rx.get(rel, set())
        names = [n + ('*' if n in rxn else '') for n in never]
        print(f'  {rel}: ' + (', '.join(names) if names else 'none'))
    print('  (* = on the receive path)')

    if args.blocks:
        blocks = []
        for rel, names in rx.items():
            for b in uncovered_blocks(cov[rel], parsed[rel][0], names):
                blocks.append(b + (rel,))
        blocks.sort(key=lambda b: (-b[0], b[4], b[1]))
        print()
        print('Largest uncovered receive-path blocks (instrumented lines never hit):')
        for n, a, b, name, rel in blocks[:args.blocks]:
            print(f'  {n:4} lines  {rel}:{a}-{b}  in {name}()')
        result['blocks'] = [list(b) for b in blocks[:args.blocks]]

    if args.json:
        with open(args.json, 'w') as f:
            json.dump(result, f, indent=1, sort_keys=True, default=list)
    return 0


if __name__ == '__main__':
    sys.exit(main())
