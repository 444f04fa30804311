#!/usr/bin/python3
"""Runs the command blocks of the docs as written (README.md, docs/guide/*.md).

Every fenced block that holds commands (a `sh`/`bash`/`console` block, or one whose first line
starts with "$ ") must be preceded by a marker comment saying what to do with it:

    <!-- doctest: run -->                 run each command; each must exit 0 (see exit:)
    <!-- doctest: root -->                the same, but only as root (the dpdk suite)
    <!-- doctest: synopsis -->            usage lines: every --option must be in `<cmd> --help`
    <!-- doctest: skip: REASON -->        not run; the reason is printed in the summary

Options follow, one a line, before the closing "-->":

    exit: N         the exit status the block's last command must end with (the others: 0);
                    exit: A,B,C gives one per command
    setup: CMD      run first, in the same scratch directory (hidden setup: files a block refers to)
    vary: A,B       table columns (by their header) whose digits are not compared
    near: A TOL     the figures of table column A are compared within TOL (absolute), the rest
                    of the line exactly (may be given more than once); for a figure that depends
                    on the CPU's arithmetic, e.g. a trained accuracy
    mask: REGEX     text matched by REGEX is not compared (may be given more than once)
    stdin: FILE     the commands' stdin (default /dev/null)
    continue        run in the scratch directory of the block before (a block that uses its files)

A block whose lines start with "$ " shows output: the lines after each command are its expected
output. Each of them must appear in the command's stdout+stderr, in order (other lines may come
between); a line "..." is an elision and is skipped. Everything else is compared exactly (trailing
blanks aside), so a virtual-clock figure that moves fails the block.

Commands run with bash in a scratch directory that mirrors the repository (symlinks to its top
entries, a fresh reports/ with the committed baselines), with build/harness on PATH, so a block can
write reports without touching the checkout. `sudo ` is dropped when running as root.

Usage: doc_blocks.py [--root-only | --no-root] [--list] [--only FILE:LINE] ROOT [FILE.md ...]
Exit status: 0 all run blocks passed, 1 a block failed (each failure is named FILE:LINE), 2 a
marker or block the runner cannot read, 77 nothing to run here (e.g. --root-only, not root).
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

COMMAND_LANGS = {"sh", "bash", "console", "shell"}
KINDS = {"run", "root", "synopsis", "skip"}
MARKER = re.compile(r"<!--\s*doctest:\s*(.*?)\s*-->", re.S)


class DocError(Exception):
    pass


class Block:
    def __init__(self, path, line, lang, lines, marker):
        self.path, self.line, self.lang, self.lines, self.marker = path, line, lang, lines, marker
        self.kind, self.reason, self.opts = None, "", {"mask": []}
        self.updates = {}  # command -> its regenerated output lines (--update)

    @property
    def where(self):
        return f"{self.path}:{self.line}"

    def lines_of(self, cmd):
        return next(e for c, e in commands(self) if c == cmd)

    def is_command(self):
        return self.lang in COMMAND_LANGS or (self.lines and self.lines[0].startswith("$ "))


def parse_marker(text, where):
    """'run' or 'skip: WHY', then one option a line ('exit: 1') -> (kind, reason, opts)."""
    lines = [l.strip() for l in text.split("\n") if l.strip()]
    kind, _, reason = lines[0].partition(":")
    kind = kind.strip()
    if kind not in KINDS:
        raise DocError(f"{where}: doctest marker: unknown kind \"{kind}\" (expected one of {', '.join(sorted(KINDS))})")
    if kind == "skip" and not reason.strip():
        raise DocError(f"{where}: doctest marker: \"skip\" needs a reason (skip: WHY)")
    if kind != "skip" and reason.strip():
        raise DocError(f"{where}: doctest marker: \"{lines[0]}\": options go on lines of their own")
    opts = {"mask": [], "near": []}
    for p in lines[1:]:
        key, colon, value = p.partition(":")
        key, value = key.strip(), value.strip()
        if p == "continue":
            opts["continue"] = True
        elif not colon or key not in ("exit", "setup", "vary", "near", "mask", "stdin"):
            raise DocError(f"{where}: doctest marker: unknown option \"{p}\" (expected exit:, setup:, vary:, near:, mask:, stdin: or continue)")
        elif key == "mask":
            opts["mask"].append(value)
        elif key == "near":
            name, _, tol = value.rpartition(" ")
            try:
                opts["near"].append((name.strip(), float(tol)))
            except ValueError:
                raise DocError(f"{where}: doctest marker: near: \"{value}\": expected a column and a tolerance (near: test acc 0.005)") from None
            if not name.strip() or not float(tol) >= 0:
                raise DocError(f"{where}: doctest marker: near: \"{value}\": expected a column and a tolerance >= 0")
        elif key == "exit":
            try:
                opts["exit"] = [int(v) for v in value.split(",")]
            except ValueError:
                raise DocError(f"{where}: doctest marker: exit: \"{value}\" is not an integer or a list of them") from None
        else:
            opts[key] = value
    return kind, reason.strip(), opts


def parse_markdown(path, text):
    """The fenced blocks of one file, each with the marker comment right above it (if any)."""
    blocks = []
    lines = text.split("\n")
    i = 0
    pending = None  # (marker text, line) of a comment that ended on the previous non-blank line
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("<!--") and "doctest:" in line:
            start = i
            buf = [line]
            while "-->" not in lines[i]:
                i += 1
                if i == len(lines):
                    raise DocError(f"{path}:{start + 1}: doctest marker never closed")
                buf.append(lines[i])
            m = MARKER.search("\n".join(buf))
            if not m:
                raise DocError(f"{path}:{start + 1}: unreadable doctest marker")
            pending = (m.group(1), start + 1)
            i += 1
            continue
        if line.startswith("```"):
            lang = line[3:].strip()
            start = i
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise DocError(f"{path}:{start + 1}: code block never closed")
            b = Block(path, start + 1, lang, body, pending)
            if pending:
                b.kind, b.reason, b.opts = parse_marker(pending[0], f"{path}:{pending[1]}")
            blocks.append(b)
            pending = None
            i += 1
            continue
        if line.strip():
            pending = None  # a marker applies only to the block right under it
        i += 1
    return blocks


def commands(block):
    """[(command, [expected output lines])] of a block."""
    out = []
    if block.lines and block.lines[0].startswith("$ "):
        for line in block.lines:
            if line.startswith("$ "):
                out.append([line[2:], []])
            else:
                out[-1][1].append(line)
    else:
        cur = ""
        for line in block.lines:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if block.kind == "synopsis" and line[:1].isspace() and out:
                out[-1][0] += " " + line.strip()  # a usage line wrapped, indented
                continue
            cur += line
            if cur.endswith("\\"):
                cur = cur[:-1] + " "
                continue
            if open_quote(cur):
                cur += "\n"  # a quoted argument over several lines
                continue
            out.append([cur, []])
            cur = ""
    return [(c, e) for c, e in out]


def open_quote(cmd):
    try:
        shlex.split(cmd, comments=True)
        return False
    except ValueError:
        return True


def column_spans(header, names):
    """Character spans [start, end) of the named columns of a right-aligned table header."""
    spans = []
    for name in names:
        m = re.search(r"(?<!\S)" + re.escape(name) + r"(?!\S)", header)
        if not m:
            raise DocError(f"vary: {name}: no such column in the header \"{header.strip()}\"")
        # A right-aligned column starts after the previous header word ends.
        words_before = list(re.finditer(r"\S+", header[:m.start()]))
        start = words_before[-1].end() + 1 if words_before else 0
        spans.append((start, m.end()))
    return spans


def normalise(line, spans, masks):
    """The line as compared: words overlapping a varying column become "#" (then every run of
    blanks is one: a wider figure may shift the row), masked text becomes "<masked>"."""
    line = line.rstrip()
    if spans:
        words = list(re.finditer(r"\S+", line))
        for w in reversed(words):
            if any(w.start() < end and w.end() > start for start, end in spans) and re.search(r"\d", w.group()):
                line = line[:w.start()] + "#" + line[w.end():]
        line = re.sub(r"\s+", " ", line)
    for rx in masks:
        line = re.sub(rx, "<masked>", line)
    return line.rstrip()


def figures_in(line, spans):
    """The words of the line under each span, in span order: one word per span or None."""
    words = list(re.finditer(r"\S+", line.rstrip()))
    out = []
    for start, end in spans:
        hit = [w.group() for w in words if w.start() < end and w.end() > start]
        out.append(hit[0] if len(hit) == 1 else None)
    return out


def near_enough(want, got, tols):
    """Each pair of figures equal within its tolerance (words that are not numbers: equal)."""
    for a, b, tol in zip(want, got, tols):
        if a == b:
            continue
        try:
            if abs(float(a) - float(b)) > tol:
                return False
        except (TypeError, ValueError):
            return False
    return True


def header_with(block, expected, names):
    """The expected line holding every named column (a table's header)."""
    header = next((l for l in expected if all(re.search(r"(?<!\S)" + re.escape(n) + r"(?!\S)", l) for n in names)), None)
    if header is None:
        raise DocError(f"{block.where}: vary:/near: {', '.join(names)}: no expected line has all these columns")
    return header


def check_output(block, expected, actual):
    """None if every expected line appears, in order; else the first missing line."""
    masks = block.opts["mask"]
    vary = [n.strip() for n in block.opts["vary"].split(",")] if block.opts.get("vary") else []
    near = block.opts["near"]
    spans, near_spans = [], []
    if vary or near:
        header = header_with(block, expected, vary + [n for n, _ in near])
        spans = column_spans(header, vary)
        near_spans = column_spans(header, [n for n, _ in near])
    tols = [t for _, t in near]
    hidden = spans + near_spans
    got = [(normalise(l, hidden, masks), figures_in(l, near_spans)) for l in actual.split("\n")]
    pos = 0
    for line in expected:
        if line.strip() == "...":
            continue
        want = normalise(line, hidden, masks)
        want_figures = figures_in(line, near_spans)
        while pos < len(got) and not (got[pos][0] == want and near_enough(want_figures, got[pos][1], tols)):
            pos += 1
        if pos == len(got):
            return line
        pos += 1
    return None


def regenerate(block, expected, actual):
    """The expected lines, each replaced by the closest line of the actual output (in order)."""
    import difflib
    got = actual.rstrip().split("\n")
    out, pos = [], 0
    for line in expected:
        if line.strip() == "..." or not got:
            out.append(line)
            continue
        best = max(range(pos, len(got)), default=None,
                   key=lambda k: difflib.SequenceMatcher(None, line, got[k]).ratio())
        if best is None or difflib.SequenceMatcher(None, line, got[best]).ratio() < 0.5:
            out.append(line)
            continue
        out.append(got[best].rstrip())
        pos = best + 1
    return out


def scratch_dir(root):
    """A directory that looks like the checkout: symlinks to its entries, its own reports/."""
    d = tempfile.mkdtemp(prefix="geotb-doctest-")
    for name in os.listdir(root):
        if name in ("reports", ".git"):
            continue
        os.symlink(os.path.join(root, name), os.path.join(d, name))
    os.makedirs(os.path.join(d, "reports"))
    shutil.copytree(os.path.join(root, "reports", "baselines"), os.path.join(d, "reports", "baselines"))
    return d


def run_block(block, root, is_root, log, scratch, update=False):
    """Returns None (passed) or the reason it failed. scratch: {"dir": the previous block's}."""
    if block.opts.get("continue"):
        if not scratch.get("dir"):
            raise DocError(f"{block.where}: continue: no block ran before it")
        d = scratch["dir"]
    else:
        if scratch.get("dir"):
            shutil.rmtree(scratch["dir"], ignore_errors=True)
        d = scratch["dir"] = scratch_dir(root)
    env = dict(os.environ)
    env["PATH"] = os.path.join(d, "build", "harness") + os.pathsep + env.get("PATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    try:
        if block.opts.get("setup"):
            p = subprocess.run(["bash", "-c", block.opts["setup"]], cwd=d, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if p.returncode != 0:
                return f"setup \"{block.opts['setup']}\" exited {p.returncode}:\n{p.stdout[-2000:]}"
        cmds = commands(block)
        wants = block.opts.get("exit", [0])
        if len(wants) == 1:
            wants = [0] * (len(cmds) - 1) + wants
        if len(wants) != len(cmds):
            raise DocError(f"{block.where}: exit: {len(wants)} statuses for {len(cmds)} commands")
        for (cmd, expected), want in zip(cmds, wants):
            run = cmd[5:] if is_root and cmd.startswith("sudo ") else cmd
            t0 = time.monotonic()
            stdin = open(block.opts.get("stdin", "/dev/null"))
            p = subprocess.run(["bash", "-o", "pipefail", "-c", run], cwd=d, env=env, text=True,
                               stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            stdin.close()
            log.write(f"--- {block.where}: $ {run}  (exit {p.returncode}, {time.monotonic() - t0:.1f} s)\n{p.stdout}\n")
            if p.returncode != want:
                return f"\"{cmd}\" exited {p.returncode}, expected {want}; its last lines:\n" + "\n".join(p.stdout.rstrip().split("\n")[-15:])
            missing = check_output(block, expected, p.stdout)
            if missing is not None and update:
                block.updates[cmd] = regenerate(block, expected, p.stdout)
                continue
            if missing is not None:
                return f"\"{cmd}\": this line of the docs is not in its output:\n  {missing}\nits output:\n{p.stdout[-4000:]}"
        return None
    except OSError as e:
        return f"could not run: {e}"


def check_synopsis(block, root):
    """Every --option of every usage line must appear in that command's --help."""
    env = dict(os.environ)
    env["PATH"] = os.path.join(root, "build", "harness") + os.pathsep + env.get("PATH", "")
    for cmd, _ in commands(block):
        words = shlex.split(cmd.split(" #")[0].replace("[", " ").replace("]", " ").replace("|", " "))
        if words and words[0] == "sudo":
            words = words[1:]
        prog = os.path.basename(words[0])
        if prog.endswith(".sh"):
            help_cmd = [words[0], "--help"]
        else:
            sub = [w for w in words[1:2] if not w.startswith("-") and not w.startswith("<")]
            help_cmd = [words[0]] + sub + ["--help"]
        before = words[: words.index("--")] if "--" in words else words
        opts = [w for w in before if w.startswith("--")]
        if prog.endswith(".sh") and not opts:
            if not os.path.isfile(os.path.join(root, words[0])):
                return f"\"{cmd}\": {words[0]} does not exist"
            continue
        p = subprocess.run(help_cmd, cwd=root, env=env, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            return f"\"{' '.join(help_cmd)}\" exited {p.returncode}:\n{p.stdout[-1500:]}"
        for w in opts:
            opt = w.split("=")[0]
            if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", p.stdout):
                return f"\"{cmd}\": {opt} is not an option of \"{' '.join(help_cmd[:-1])}\" (its --help)"
    return None


def write_updates(root, blocks):
    by_file = {}
    for b in blocks:
        by_file.setdefault(b.path, []).append(b)
    for path, bs in by_file.items():
        full = os.path.join(root, path)
        with open(full, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for b in bs:
            body, cmd = [], None
            for line in b.lines:
                if line.startswith("$ "):
                    cmd = line[2:]
                    body.append(line)
                    body += b.updates.get(cmd, [l for l in b.lines_of(cmd)])
            assert len(body) == len(b.lines), b.where
            lines[b.line:b.line + len(b.lines)] = body
            print(f"  updated {b.where}")
        with open(full + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        os.replace(full + ".tmp", full)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root")
    ap.add_argument("files", nargs="*")
    ap.add_argument("--root-only", action="store_true", help="run only the root blocks")
    ap.add_argument("--no-root", action="store_true", help="leave the root blocks out")
    ap.add_argument("--list", action="store_true", help="list the blocks and what would be done")
    ap.add_argument("--only", help="run only the block at FILE:LINE")
    ap.add_argument("--update", action="store_true",
                    help="rewrite each sample output line that differs with the closest line of the run's output")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    files = args.files or ["README.md"] + sorted(
        os.path.join("docs", "guide", f) for f in os.listdir(os.path.join(root, "docs", "guide")) if f.endswith(".md"))
    is_root = os.geteuid() == 0
    try:
        blocks = []
        for f in files:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                blocks += parse_markdown(f, fh.read())
    except DocError as e:
        print(f"doc_blocks: {e}", file=sys.stderr)
        return 2
    cmd_blocks = [b for b in blocks if b.is_command()]
    unmarked = [b for b in cmd_blocks if b.kind is None]
    stray = [b for b in blocks if not b.is_command() and b.kind is not None]
    if unmarked or stray:
        for b in unmarked:
            print(f"doc_blocks: {b.where}: a command block without a doctest marker (run, root, synopsis or skip: WHY)", file=sys.stderr)
        for b in stray:
            print(f"doc_blocks: {b.where}: a doctest marker on a block that is not a command block (```sh or \"$ \" lines)", file=sys.stderr)
        return 2
    if args.only:
        cmd_blocks = [b for b in cmd_blocks if b.where == args.only]
        if not cmd_blocks:
            print(f"doc_blocks: --only {args.only}: no command block there", file=sys.stderr)
            return 2
    counts = {k: 0 for k in KINDS}
    for b in cmd_blocks:
        counts[b.kind] += 1
    print(f"doc_blocks: {len(blocks)} blocks in {len(files)} files, {len(cmd_blocks)} of them commands: "
          f"{counts['run']} run, {counts['root']} root, {counts['synopsis']} synopsis, {counts['skip']} skipped")
    if not args.list:
        for b in cmd_blocks:
            if b.kind == "skip":
                print(f"  skip {b.where}: {b.reason}")
    if args.list:
        for b in cmd_blocks:
            what = f"skipped: {b.reason}" if b.kind == "skip" else "; ".join(c.split("\n")[0] for c, _ in commands(b))
            print(f"  {b.kind:8} {b.where}: {what}")
        return 0
    todo = []
    for b in cmd_blocks:
        if b.kind == "skip":
            continue
        if b.kind == "root" and (args.no_root or not is_root):
            print(f"  not root: {b.where} left to the dpdk suite" if not args.no_root else f"  root block {b.where}: --no-root")
            continue
        if args.root_only and b.kind != "root":
            continue
        todo.append(b)
    if not todo:
        print("doc_blocks: nothing to run here")
        return 77
    failed = 0
    log_path = os.path.join(tempfile.gettempdir(), f"doc_blocks-{os.getpid()}.log")
    scratch = {}
    with open(log_path, "w") as log:
        for b in todo:
            t0 = time.monotonic()
            try:
                why = check_synopsis(b, root) if b.kind == "synopsis" else run_block(b, root, is_root, log, scratch, args.update)
            except DocError as e:
                why = str(e)
            status = "ok" if why is None else "FAIL"
            print(f"  {status:4} {b.kind:8} {b.where} ({time.monotonic() - t0:.1f} s)")
            if why is not None:
                failed += 1
                print("    " + why.replace("\n", "\n    "))
    if scratch.get("dir"):
        shutil.rmtree(scratch["dir"], ignore_errors=True)
    if args.update:
        write_updates(root, [b for b in todo if b.updates])
    if failed:
        print(f"doc_blocks: {len(todo) - failed} of {len(todo)} blocks passed (every command's output: {log_path})")
        return 1
    os.unlink(log_path)
    print(f"doc_blocks: {len(todo)} of {len(todo)} blocks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
