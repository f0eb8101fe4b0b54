#!/usr/bin/env python3
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.dirname(here)]
args, names = sys.argv[1:], []
while args:
    a = args.pop(0)
    if a in ('--parallel', '--verbosity'):
        args.pop(0)
    elif not a.startswith('-'):
        names.append(a)
suite = unittest.defaultTestLoader.loadTestsFromNames(names)
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
