-- The vendor's Tauri updater signature of an artifact (the content of the minisign .sig file `tauri build` writes),
-- served in the Tauri update feed; null: the artifact is not offered to Tauri.
ALTER TABLE "release_artifacts" ADD COLUMN "tauri_signature" TEXT;
