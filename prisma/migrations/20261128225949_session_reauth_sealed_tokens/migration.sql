-- AlterTable
ALTER TABLE "email_outbox" ADD COLUMN     "sealed_token" TEXT;

-- CreateTable
CREATE TABLE "session_reauthentications" (
    "family_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "reauthenticated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "session_reauthentications_pkey" PRIMARY KEY ("family_id")
);

-- CreateIndex
CREATE INDEX "session_reauthentications_user_id_idx" ON "session_reauthentications"("user_id");

-- AddForeignKey
ALTER TABLE "session_reauthentications" ADD CONSTRAINT "session_reauthentications_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Single-use tokens are no longer kept in clear in stored email bodies: emails already sent or failed keep their
-- text with the token redacted; a pending one is redacted once it is delivered (notifications/delivery.ts).
UPDATE "email_outbox"
   SET "html" = regexp_replace("html", '(kf[ir]_)[A-Za-z0-9_-]+', '\1REDACTED', 'g'),
       "text" = regexp_replace("text", '(kf[ir]_)[A-Za-z0-9_-]+', '\1REDACTED', 'g')
 WHERE "kind" IN ('invitation', 'password-reset') AND "status" <> 'pending';
