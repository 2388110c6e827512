import ArgumentParser

ContinualCommand.main()
