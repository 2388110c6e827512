// Fuzz target: the HDF5 scenario reader (file bytes → ScenarioArchive.read), which also runs
// the data checks every dataset scenario goes through.
import ContinualExperiments
import Foundation

let scenarioPath = NSTemporaryDirectory() + "/fuzz-scenario-\(getpid()).h5"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FileManager.default.createFile(atPath: scenarioPath, contents: Data(bytes: data, count: size))
    _ = try? ScenarioArchive.read(path: scenarioPath)
    return 0
}
