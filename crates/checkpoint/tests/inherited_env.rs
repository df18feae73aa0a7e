//! An agent started from a git hook or `git rebase --exec` inherits `GIT_DIR`,
//! `GIT_INDEX_FILE` and `GIT_WORK_TREE` pointing at the user's repository: the store must
//! ignore them. Alone in its test binary because it changes the process environment.

mod common;

use checkpoint::Resolution;
use common::{Fixture, shown};

#[test]
fn git_variables_of_the_users_repository_are_ignored() {
    let f = Fixture::new();
    f.write("a.txt", "a0\n");
    f.init_user_repo();
    let user_state = f.user_git_state();
    // SAFETY: the only test of this binary; nothing else reads the environment meanwhile.
    unsafe {
        std::env::set_var("GIT_DIR", f.path(".git"));
        std::env::set_var("GIT_INDEX_FILE", f.path(".git/index"));
        std::env::set_var("GIT_WORK_TREE", f.ws());
        std::env::set_var("GIT_OBJECT_DIRECTORY", f.path(".git/objects"));
    }
    let store = f.store("s1");
    let before = store.snapshot().unwrap();
    f.write("a.txt", "a1\n");
    let cp = store
        .checkpoint(&before, &store.snapshot().unwrap())
        .unwrap();
    assert_eq!(shown(&cp.changed), ["M a.txt"]);
    store
        .apply(&store.plan_undo(&cp).unwrap(), Resolution::SkipConflicts)
        .unwrap();
    assert_eq!(f.read("a.txt"), b"a0\n");
    unsafe {
        for name in [
            "GIT_DIR",
            "GIT_INDEX_FILE",
            "GIT_WORK_TREE",
            "GIT_OBJECT_DIRECTORY",
        ] {
            std::env::remove_var(name);
        }
    }
    assert_eq!(f.user_git_state(), user_state);
}
