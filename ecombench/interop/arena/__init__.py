"""Arena-style comparison of graded runs on one split.

Pairwise battles per task, Bradley–Terry and Elo ratings with bootstrap intervals over tasks,
win/tie/loss tables, markdown and HTML reports.

Like CRS Arena, systems are compared on the same information need (here: the same task), and a
ranking is read from pairwise outcomes; unlike a crowd vote, each battle is decided by the grader.
"""
