"""`python -m ecombench`: the `ecombench` command."""

from ecombench.flows.cli import main

main()
