"""A person's input in the terminal, for lab.play."""


class Quit(Exception):
    """The person typed q or closed standard input."""


def ask(prompt: str, read, write) -> str:
    """One stripped line of input; Quit on end of input or q."""
    write(prompt)
    line = read()
    if not line:  # end of input
        write("\n")
        raise Quit
    line = line.strip().lower()
    if line in ("q", "quit", "exit"):
        raise Quit
    return line
