from sst_core.cli import main

raise SystemExit(main())
