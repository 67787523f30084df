from replay_cli.cli import main

main()
