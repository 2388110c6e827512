import Foundation
import PackagePlugin

/// Stamps the `continual` binary with the git commit of the checkout it is built from.
///
/// A prebuild command (it runs before every build, cheaply) executes `build-stamp.sh`, which asks
/// git for the package's HEAD and whether tracked files differ from it, and writes
/// `BuildStamp.swift` only when that changed (so an unchanged checkout recompiles nothing). The
/// CLI records the stamp in every results file (`toolkit_build_commit`, `toolkit_build_dirty`)
/// and prints it in `continual --version`. Outside a git checkout the commit is "" and dirty -1.
/// Applied to the CLI only: the libraries an app links run no git at build time.
@main
struct BuildStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildStamp")
        let script = context.package.directoryURL.appending(path: "Plugins/BuildStamp/build-stamp.sh")
        return [.prebuildCommand(displayName: "Stamping the build with the checkout's git commit",
                                 executable: URL(fileURLWithPath: "/bin/sh"),
                                 arguments: [script.path, context.package.directoryURL.path, output.path],
                                 outputFilesDirectory: output)]
    }
}
