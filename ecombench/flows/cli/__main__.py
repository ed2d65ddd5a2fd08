"""`python -m ecombench.flows.cli`: the `ecombench` command."""

from ecombench.flows.cli import main

main()
