import CHDF5

extension HDF5Group {
    /// Copies the object `name` (a group with everything below it, or a dataset) into
    /// `destination` as `newName`, possibly in another file (`H5Ocopy`). Used to merge results
    /// files without decoding them; references between objects copied together stay valid.
    public func copy(_ name: String, to destination: HDF5Group, as newName: String? = nil) throws {
        let target = newName ?? name
        let object = "'\(displayPath(joinPath(path, name)))'"
        guard exists(name) else { throw file.failure("copy", object, kind: .notFound, reason: "it does not exist") }
        guard !destination.exists(target) else {
            throw destination.file.failure("copy into", "'\(displayPath(joinPath(destination.path, target)))'",
                                           kind: .alreadyExists, reason: "it already exists")
        }
        try check(H5Ocopy(handle.id, name, destination.handle.id, target, chdf5_H5P_DEFAULT(), chdf5_H5P_DEFAULT()),
                  file.failure("copy", object))
    }
}
