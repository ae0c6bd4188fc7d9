from icml26.cli import main

raise SystemExit(main())
