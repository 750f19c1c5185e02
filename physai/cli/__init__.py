"""The command ``python -m physai fit-servo``: chapter 4's fit run on a reader's own recording, written out as MJCF.

:mod:`physai.__main__` parses the arguments and draws the report's figure; these modules check the request
(:mod:`~physai.cli.fit_request`), identify the servo (:mod:`~physai.cli.identify`), write the file and the report
(:mod:`~physai.cli.fit_report`), and keep every write safe (:mod:`~physai.cli.outputs`). They sit above the experiments,
whose fits and tables they reuse, and below the command line.
"""
