#!/usr/bin/env python3
"""Checks that src/ keeps the shape README and docs/architecture.md promise.

Run by ctest (test `layout_check`) and by hand: `scripts/check_layout.py`.

1. Layering. A file in src/<stage>/ may include only headers of its own stage
   and of the stages its library links, as src/CMakeLists.txt declares them
   (`target_link_libraries(laggard_<stage> PUBLIC|PRIVATE laggard_<other>)`,
   followed through PUBLIC links). So the rules live in one place, the build.
2. Families. Inside ingest/, a file of one family (ingest/<family>/, with
   ingest/traces/<kind>/ a family of its own) includes only its own family,
   ingest/common/ and, for traces, ingest/traces/common/. Inside analysis/,
   a detector's folder includes only itself, analysis/common/,
   analysis/suspects.h and the detectors whose output it takes as input
   (DETECTOR_INPUTS below); common/ only itself. A stage's files at its top
   (ingest.h, readers.h; analyze_run.*, suspects.*) see every family. An
   include names a header by its path under src/: never "." or "..".
   tests/ mirrors src/: every test file sits in the folder of what it tests.
3. Size. No file in src/ over 800 lines and no function over 120, except
   where the file says why in a line `// layout: <reason>` (a generated or
   table-like file).

Exit status: 0 when every rule holds, 1 with one line per breach otherwise.
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 120

INCLUDE = re.compile(r'^\s*#\s*include\s+["<]([^">]+)[">]')
EXCEPTION = re.compile(r'//\s*layout:\s*\S')


def link_graph(src):
    """{stage: set of stages it may include}, from src/CMakeLists.txt."""
    text = open(os.path.join(src, 'CMakeLists.txt')).read()
    public, private = {}, {}
    for m in re.finditer(r'target_link_libraries\(\s*laggard_(\w+)(.*?)\)', text, re.S):
        stage, body = m.group(1), m.group(2)
        mode = 'PUBLIC'
        for tok in body.split():
            if tok in ('PUBLIC', 'PRIVATE', 'INTERFACE'):
                mode = tok
            elif tok.startswith('laggard_'):
                (public if mode != 'PRIVATE' else private).setdefault(stage, set()).add(tok[8:])
    for m in re.finditer(r'add_library\(\s*laggard_(\w+)', text):
        public.setdefault(m.group(1), set())

    def closure(stage, seen):
        for dep in public.get(stage, ()):
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    allowed = {}
    for stage in public:
        direct = public.get(stage, set()) | private.get(stage, set())
        reach = set(direct)
        for dep in direct:
            closure(dep, reach)
        allowed[stage] = reach | {stage}
    return allowed


# The stages whose folders are families, and the files at a stage's top that
# every family of it may include.
FAMILY_STAGES = {'ingest': set(), 'analysis': {'analysis/suspects.h'}}

# analysis/: {detector folder: the detectors whose output it reads}. The
# hardware and network detectors read the step and trace detectors' output
# only through analysis/suspects.h.
DETECTOR_INPUTS = {
    'steps': set(),
    'traces': set(),
    'hardware': set(),
    'network': set(),
    'host': {'steps'},
    'pauses': {'steps', 'traces'},
    'pipelines': {'traces'},
    'hangs': set(),
    'tool_reports': set(),
}


def family_of(rel):
    """'ingest/network/ibstat.cc' -> 'network'; ingest/traces/<kind> ->
    'traces/<kind>'; 'analysis/steps/level_shift.h' -> 'steps'; None for a
    file at a stage's top or outside the family stages."""
    parts = rel.split('/')
    if parts[0] not in FAMILY_STAGES or len(parts) < 3:
        return None
    if parts[0] == 'ingest' and parts[1] == 'traces' and len(parts) >= 4:
        return 'traces/' + parts[2]
    return parts[1]


def family_may_include(stage, family, target, target_rel):
    if target_rel in FAMILY_STAGES[stage]:
        return family != 'common'  # common/ sits below every detector
    if target is None:
        return False
    if target in (family, 'common'):
        return True
    if stage == 'analysis':
        return target in DETECTOR_INPUTS.get(family, set())
    return family.startswith('traces/') and target == 'traces/common'


def strip_code(lines):
    """Lines with strings, character literals and comments blanked."""
    out, in_block = [], False
    for line in lines:
        s = line
        if in_block:
            if '*/' not in s:
                out.append('')
                continue
            s, in_block = s[s.index('*/') + 2:], False
        s = re.sub(r'"(\\.|[^"\\])*"', '""', s)
        s = re.sub(r"'(\\.|[^'\\])*'", "''", s)
        s = re.sub(r'/\*.*?\*/', '', s)
        s = re.sub(r'//.*', '', s)
        if '/*' in s:
            s, in_block = s[:s.index('/*')], True
        out.append(s)
    return out


CONTROL = re.compile(r'^\s*(if|for|while|switch|else|do|try|catch|namespace|struct|class|enum|'
                     r'union|extern)\b')


def long_functions(lines):
    """(first line, length) of each function body longer than the limit.

    A definition is a line ending in '{' after a ')' (possibly followed by
    const / override / noexcept / a trailing return type), outside control
    flow; its body runs to the matching brace. Lambdas count as functions.
    """
    code = strip_code(lines)
    found = []
    for i, line in enumerate(code):
        s = line.rstrip()
        if not s.endswith('{') or CONTROL.match(s):
            continue
        head = ' '.join(x.strip() for x in code[max(0, i - 4):i + 1])
        if not re.search(r'\)\s*(const|override|noexcept|final|mutable|->[^{;]*|\s)*\{$', head):
            continue
        depth, started, j = 0, False, i
        while j < len(code):
            for ch in code[j]:
                if ch == '{':
                    depth, started = depth + 1, True
                elif ch == '}':
                    depth -= 1
            if started and depth <= 0:
                break
            j += 1
        if j - i + 1 > MAX_FUNCTION_LINES:
            found.append((i + 1, j - i + 1))
    return found


def check(root):
    """The breaches of the tree at `root`, one line each."""
    src = os.path.join(root, 'src')
    allowed = link_graph(src)
    problems = []
    for dirpath, _, names in os.walk(src):
        for name in sorted(names):
            if not name.endswith(('.cc', '.h')):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            stage = rel.split('/')[0]
            lines = open(path, encoding='utf-8', errors='replace').read().split('\n')
            family = family_of(rel)
            for n, line in enumerate(lines, 1):
                m = INCLUDE.match(line)
                if not m or '/' not in m.group(1):
                    continue
                target = m.group(1)
                if '..' in target.split('/') or '.' in target.split('/'):
                    problems.append(f'src/{rel}:{n}: includes {target}; name a header by its '
                                    f'path under src/, without "." or ".."')
                    continue
                target_stage = target.split('/')[0]
                if not os.path.exists(os.path.join(src, target)):
                    continue  # a generated file or a library header
                if target_stage not in allowed.get(stage, {stage}):
                    problems.append(f'src/{rel}:{n}: {stage} includes {target}, but laggard_{stage} '
                                    f'does not link laggard_{target_stage} (src/CMakeLists.txt)')
                elif family and target_stage == stage:
                    if not family_may_include(stage, family, family_of(target), target):
                        seen = ('itself and ingest/common/' if stage == 'ingest' else
                                'itself, analysis/common/, analysis/suspects.h and the '
                                'detectors it reads (DETECTOR_INPUTS)')
                        problems.append(f'src/{rel}:{n}: {stage} family {family} includes '
                                        f'{target}; a family sees only {seen}')
            excepted = any(EXCEPTION.search(line) for line in lines)
            if excepted:
                continue
            max_file, max_function = MAX_FILE_LINES, MAX_FUNCTION_LINES
            if len(lines) > max_file + 1:
                problems.append(f'src/{rel}: {len(lines) - 1} lines, more than {max_file} '
                                f'(split it, or say why not in a `// layout:` line)')
            for first, length in long_functions(lines):
                if length > max_function:
                    problems.append(f'src/{rel}:{first}: a function of {length} lines, more than '
                                    f'{max_function}')
    tests = os.path.join(root, 'tests')
    for dirpath, _, names in os.walk(tests):
        for name in names:
            if not name.endswith('_test.cc'):
                continue
            rel = os.path.relpath(dirpath, tests)
            if rel == '.' or not os.path.isdir(os.path.join(src, rel)):
                problems.append(f'tests/{os.path.relpath(os.path.join(dirpath, name), tests)}: '
                                f'tests/ mirrors src/, and src/{rel}/ does not exist')
    return problems


def self_test():
    """Each rule, broken once in a small tree, is reported; the clean tree is not."""
    import tempfile
    cmake = ('add_library(laggard_base STATIC base/a.cc)\n'
             'add_library(laggard_model STATIC model/m.cc)\n'
             'target_link_libraries(laggard_model PUBLIC laggard_base)\n'
             'add_library(laggard_ingest STATIC ingest/x/r.cc)\n'
             'target_link_libraries(laggard_ingest PUBLIC laggard_model)\n'
             'add_library(laggard_analysis STATIC analysis/d.cc)\n'
             'target_link_libraries(laggard_analysis PUBLIC laggard_model)\n')
    analysis_ok = ('#include "analysis/common/f.h"\n#include "analysis/suspects.h"\n'
                   '#include "analysis/steps/s.h"\n')
    files = {
        'src/CMakeLists.txt': cmake,
        'src/base/a.h': '',
        'src/model/m.h': '#include "base/a.h"\n',
        'src/ingest/common/c.h': '',
        'src/ingest/ingest.h': '#include "ingest/x/r.h"\n#include "ingest/y/s.h"\n',
        'src/ingest/x/r.h': '#include "ingest/common/c.h"\n#include "model/m.h"\n',
        'src/ingest/y/s.h': '',
        'src/ingest/traces/common/t.h': '',
        'src/ingest/traces/k/k.h': '#include "ingest/traces/common/t.h"\n',
        'src/analysis/common/f.h': '',
        'src/analysis/suspects.h': '#include "analysis/steps/s.h"\n',
        'src/analysis/analyze_run.h': '#include "analysis/host/h.h"\n',
        'src/analysis/steps/s.h': '#include "analysis/common/f.h"\n',
        'src/analysis/host/h.h': analysis_ok,
        'src/analysis/d.cc': 'int F() {\n' + '  int x = 0;\n' * 10 + '  return x;\n}\n',
        'tests/model/m_test.cc': '',
    }
    breaches = {
        'src/analysis/e.h': ('#include "ingest/ingest.h"\n', 'does not link laggard_ingest'),
        'src/ingest/x/q.cc': ('#include "ingest/y/s.h"\n', 'ingest family x includes ingest/y/s.h'),
        'src/ingest/traces/k/j.cc': ('#include "ingest/x/r.h"\n', 'family traces/k includes'),
        'src/analysis/steps/t.cc': ('#include "analysis/host/h.h"\n',
                                    'analysis family steps includes analysis/host/h.h'),
        'src/analysis/host/g.cc': ('#include "analysis/analyze_run.h"\n',
                                   'analysis family host includes analysis/analyze_run.h'),
        'src/analysis/common/g.cc': ('#include "analysis/suspects.h"\n',
                                     'analysis family common includes analysis/suspects.h'),
        'src/analysis/steps/u.cc': ('#include "../host/h.h"\n', 'without "." or ".."'),
        'src/analysis/steps/v.cc': ('#include <analysis/host/h.h>\n',
                                    'analysis family steps includes analysis/host/h.h'),
        'src/base/big.cc': ('int G() {\n' + '  G();\n' * 151 + '}\n', 'a function of 153 lines'),
        'src/model/long.cc': ('int a;\n' * 801, '801 lines, more than 800'),
        'tests/nowhere/n_test.cc': ('', 'src/nowhere/ does not exist'),
    }
    failures = []
    with tempfile.TemporaryDirectory() as clean:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(clean, path)), exist_ok=True)
            open(os.path.join(clean, path), 'w').write(text)
        if check(clean):
            failures.append(f'the clean tree is reported: {check(clean)}')
        excepted = os.path.join(clean, 'src/model/table.cc')
        open(excepted, 'w').write('// layout: a generated table\n' + 'int a;\n' * 1001)
        if check(clean):
            failures.append('a file with a `// layout:` line is reported')
        os.remove(excepted)
        for path, (text, expect) in breaches.items():
            full = os.path.join(clean, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            open(full, 'w').write(text)
            found = check(clean)
            if not any(expect in p for p in found):
                failures.append(f'{path}: expected a line with "{expect}", got {found}')
            os.remove(full)
    for f in failures:
        print('self-test:', f)
    print('self-test: ' + ('FAILED' if failures else 'every rule is caught'))
    return 1 if failures else 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    problems = check(ROOT)
    for p in problems:
        print(p)
    print(f'layout: {len(problems)} problem(s)' if problems else 'layout: every rule holds')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
