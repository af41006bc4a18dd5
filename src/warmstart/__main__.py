from warmstart.cli.main import main

raise SystemExit(main())
