"""``python -m demo``: run the demo (see :mod:`demo.run`)."""

from demo.run import main

main()
