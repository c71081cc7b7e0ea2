"""`python -m interface.cli`: the same command as the `runcode-policy` script."""

from interface.cli import main

if __name__ == "__main__":
    main(prog_name="runcode-policy")
