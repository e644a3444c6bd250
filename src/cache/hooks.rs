//! Cache hooks: teardown notifications (issue 5).
