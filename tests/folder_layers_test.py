#!/usr/bin/env python3
"""The folders of runner/src include each other one way (docs/design.md, "Folder layering").

Reads every `#include "folder/..."` line of the files in SRC/*/ whose first path part is a
folder of SRC, and fails, naming the loop and the include lines that make it, when a folder
reaches (directly or through others) a folder that includes it back. Prints the folder graph.

    folder_layers_test.py SRC       check SRC (runner/src): exit 0 one way, 1 a loop, 2 bad input
    folder_layers_test.py --self-test   the check against small trees made here, with and
                                        without a loop
"""

import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/([^"]+)"')


def include_edges(src):
    """{folder: {included folder: first 'file:line' that includes it}} for the folders of src."""
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    edges = {f: {} for f in folders}
    for folder in folders:
        for root, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as text:
                    for number, line in enumerate(text, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in edges and m.group(1) != folder:
                            where = "%s:%d" % (os.path.relpath(path, src), number)
                            edges[folder].setdefault(m.group(1), where)
    return edges


def path_between(edges, start, goal):
    """A shortest list of folders from start to goal along edges, or None."""
    previous = {start: None}
    queue = [start]
    for folder in queue:
        for nxt in sorted(edges[folder]):
            if nxt in previous:
                continue
            previous[nxt] = folder
            if nxt == goal:
                path = [goal]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return path[::-1]
            queue.append(nxt)
    return None


def loops(edges):
    """One loop per include that some folder includes back: [folder, ..., folder]."""
    found, seen = [], set()
    for folder in sorted(edges):
        for target in sorted(edges[folder]):
            back = path_between(edges, target, folder)
            if back is None:
                continue
            cycle = [folder] + back
            key = frozenset(cycle)
            if key not in seen:
                seen.add(key)
                found.append(cycle)
    return found


def check(src, out=sys.stdout):
    """Prints the graph and any loops; returns the exit status."""
    if not os.path.isdir(src):
        print("folder_layers: %s: not a folder (expected runner/src)" % src, file=out)
        return 2
    edges = include_edges(src)
    for folder in sorted(edges):
        print("%s -> %s" % (folder, " ".join(sorted(edges[folder])) or "(none)"), file=out)
    found = loops(edges)
    for cycle in found:
        steps = ["%s -> %s (%s)" % (a, b, edges[a][b]) for a, b in zip(cycle, cycle[1:])]
        print("folder_layers: loop %s: %s" % (" -> ".join(cycle), "; ".join(steps)), file=out)
    return 1 if found else 0


def write_tree(root, files):
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w", encoding="utf-8") as f:
            f.write(text)


def self_test():
    """The check passes a one-way tree and fails a tree with a loop through three folders."""
    one_way = {"a/x.hpp": '#include "b/y.hpp"\n#include "tunebench/op.hpp"\n',
               "b/y.hpp": '#include "c/z.hpp"\n', "c/z.hpp": '#include <vector>\n#include "c/w.hpp"\n'}
    looped = dict(one_way, **{"c/z.hpp": '  #  include "a/x.hpp"\n'})
    with tempfile.TemporaryDirectory() as good, tempfile.TemporaryDirectory() as bad:
        write_tree(good, one_way)
        write_tree(bad, looped)
        with open(os.devnull, "w") as quiet:
            if check(good, quiet) != 0:
                print("folder_layers self-test: a one-way tree was reported as a loop")
                return 1
        found = loops(include_edges(bad))
        if [sorted(set(c)) for c in found] != [["a", "b", "c"]]:
            print("folder_layers self-test: the loop a -> b -> c -> a was not found: %s" % found)
            return 1
    print("folder_layers self-test: ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print("usage: folder_layers_test.py SRC | --self-test", file=sys.stderr)
        return 2
    return check(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
