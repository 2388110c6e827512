import ContinualHDF5

extension ResultsWriter {
    /// `runs/<id>/few_shot/`: the protocol as attributes (method, users, rates, steps, support and
    /// query sizes, meta-training rows), held-out accuracy per user × experience × k, its mean and
    /// spread per k, the meta-training loss per outer step and the initialisation itself.
    static func writeFewShot(_ f: FewShotOutcome, into run: HDF5Group) throws {
        let g = try run.createGroup("few_shot")
        let a = g.attributes
        let c = f.config
        try a.set("meaning", "k-step personalisation of held-out users from a (meta-)learned initialisation")
        try a.set("method", c.method.rawValue)
        try a.set("train_users", Int64(f.trainUsers))
        try a.set("held_out_users", Int64(f.heldOutUsers.count))
        try a.set("meta_steps", Int64(c.metaSteps))
        try a.set("meta_batch", Int64(c.metaBatch))
        try a.set("inner_steps", Int64(c.innerSteps))
        try a.set("inner_lr", c.innerLR)
        try a.set("outer_lr", c.outerLR)
        try a.set("adapt_lr", c.adaptLR)
        try a.set("support", Int64(c.support))
        try a.set("query", Int64(c.query))
        try a.set("meta_rows", Int64(f.metaRows))
        try a.set("task", "one user in one experience; held-out support = the experience's first `support` training samples, "
            + "evaluated on its test set after k full-batch SGD steps of adapt_lr")

        let K = c.k.count, U = f.heldOutUsers.count, T = f.accuracy.first?.count ?? 0
        let k = try g.write(c.k.map(Int64.init), shape: [K], name: "k")
        try k.attributes.set("meaning", "personalisation steps")
        try k.makeDimensionScale(name: "k")
        let user = try g.write(f.heldOutUsers.map(Int64.init), shape: [U], name: "user")
        try user.attributes.set("meaning", "population index of the held-out user")
        try user.makeDimensionScale(name: "user")
        let acc = try g.write(f.accuracy.flatMap { $0.flatMap { $0 } }, shape: [U, T, K], name: "accuracy")
        try acc.attributes.set("meaning", "test accuracy of held-out user u on experience j after k[m] personalisation steps")
        try acc.attributes.set("units", "fraction correct (0..1)")
        try acc.attachDimensionScale(user, toDimension: 0)
        try acc.attachDimensionScale(k, toDimension: 2)
        let mean = try g.write(f.meanAccuracy, shape: [K], name: "mean_accuracy")
        try mean.attributes.set("meaning", "mean of accuracy over held-out users and experiences")
        try mean.attributes.set("units", "fraction correct (0..1)")
        try mean.attachDimensionScale(k, toDimension: 0)
        let std = try g.write(f.userStd, shape: [K], name: "user_std")
        try std.attributes.set("meaning", "standard deviation over held-out users of each user's mean accuracy over experiences")
        try std.attachDimensionScale(k, toDimension: 0)
        let loss = try g.write(f.metaLoss, shape: [f.metaLoss.count], name: "meta_loss")
        try loss.attributes.set("meaning", "mean over the outer step's tasks of the loss after adaptation (FOMAML: query loss; "
            + "Reptile and FedAvg: loss of the last inner step)")
        let p = try g.write(f.initialisation, shape: [f.initialisation.count], name: "initialisation")
        try p.attributes.set("meaning", "the parameters the held-out users start from (the model's flat layout)")
    }
}
