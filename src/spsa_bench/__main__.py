import sys

from spsa_bench.cli import main

sys.exit(main())
