from replay_cli.cli.app import main

main()
