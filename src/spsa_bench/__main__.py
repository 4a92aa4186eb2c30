import sys

from spsa_bench.cli.main import main

sys.exit(main())
