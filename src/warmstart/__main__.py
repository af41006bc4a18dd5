from warmstart.cli import main

raise SystemExit(main())
