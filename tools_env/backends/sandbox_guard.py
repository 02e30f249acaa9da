"""The program that runs inside the sandbox before the model's code: limits it from within the interpreter.

It installs a ``sys.addaudithook`` hook (which cannot be removed afterwards) that refuses sockets, new
processes (fork, exec, spawn, ``subprocess``, ``os.system``), signals to other processes, calling or resolving
native functions and raw memory access through ``ctypes``,
and any write, create, delete, rename or permission change outside the scratch folder. Then it runs the code
as ``__main__`` and, like a notebook cell, prints the value of a final bare expression.

This is defence in depth: under bubblewrap or a network namespace the OS enforces the same rules; without
them (the ``rlimits`` mechanism) this hook and the resource limits are the enforcement.
"""

GUARD = r"""
import ast, os, sys

def _guard(scratch):
    scratch = os.path.realpath(scratch)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    devices = ("/dev/null",)
    blocked = {"os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
               "subprocess.Popen",
               "os.kill", "os.killpg", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function",
               "ctypes.cdata", "ctypes.string_at", "ctypes.wstring_at", "ctypes.PyObj_FromPtr", "os.setuid",
               "os.setgid", "os.chroot", "sys.remote_exec", "_posixsubprocess.fork_exec", "os.pidfd_open"}
    one_path = {"os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate", "os.utime",
                "shutil.rmtree", "os.mkfifo", "os.mknod", "os.chflags", "os.lchflags", "os.setxattr",
                "os.removexattr"}
    two_paths = {"os.rename", "os.link", "os.symlink", "shutil.move", "shutil.copyfile", "shutil.copytree"}

    def inside(path):
        if isinstance(path, int):
            return True
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return real == scratch or real.startswith(scratch + os.sep) or real in devices

    def deny(what):
        raise PermissionError("sandbox: " + what)

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & write_flags)
            if writing and not inside(path):
                deny("writing %r is not allowed; write files under the current directory" % (path,))
        elif event in one_path:
            if args and not inside(args[0]):
                deny("%s on %r is not allowed outside the current directory" % (event, args[0]))
        elif event in two_paths:
            if not all(inside(a) for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))):
                deny("%s outside the current directory is not allowed" % event)
        elif event.startswith("socket.") and event != "socket.gethostname":
            deny("network access is disabled")
        elif event in blocked:
            deny("%s is not allowed (no subprocesses, signals or native calls)" % event)

    sys.addaudithook(hook)


def _main():
    import traceback
    scratch = sys.argv[1]
    source = sys.stdin.read()
    sys.stdin = open(os.devnull)
    try:
        tree = ast.parse(source, "<code>")
    except SyntaxError:
        traceback.print_exc(limit=0)
        sys.exit(1)
    echo = bool(tree.body) and isinstance(tree.body[-1], ast.Expr)
    last = ast.Expression(tree.body.pop().value) if echo else None
    sys.argv = ["<code>"]
    _guard(scratch)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(tree, "<code>", "exec"), namespace)
        if last is not None:
            value = eval(compile(last, "<code>", "eval"), namespace)
            if value is not None:
                print(repr(value))
    except SystemExit:
        raise
    except BaseException as exc:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != "<string>"]
        print("Traceback (most recent call last):", file=sys.stderr)
        print("".join(traceback.format_list(frames)), end="", file=sys.stderr)
        print("".join(traceback.format_exception_only(type(exc), exc)), end="", file=sys.stderr)
        sys.exit(1)

_main()
"""
