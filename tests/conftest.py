import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

# pytester: the pytest plugin is tested in subprocess pytest runs (tests/test_pytest_plugin.py)
pytest_plugins = ["pytester"]
